/*
 * The op framework: what every op file in src/ops/ uses. One file per op family holds, per op,
 * its shape/dtype rule, its GPU path (WGSL kernel in src/kernels/<family>.wgsl) and its call of
 * the CPU reference (src/cpu/), so backward rules can be added beside them later.
 *
 * The shape of an op function:
 *
 *   wgt_status wgt_foo(const wgt_tensor *x, ..., wgt_tensor **out)
 *   {
 *       OP_BEGIN(x, out);                         // NULL checks, *out = NULL, ctx, sticky errors
 *       ... check shapes and dtypes: return op_fail(ctx, WGT_ERR_SHAPE, "foo: ...");
 *       wgt_tensor *y;  wgt_status st = wgt_tensor_new(ctx, dtype, ndim, shape, &y);
 *       if (op_use_gpu(ctx, "foo", dtype_supported_on_gpu))  st = foo_gpu(...);
 *       else                                                 st = op_reference(...);
 *       return op_finish(st, y, out);             // frees y on failure
 *   }
 *
 * GPU kernels (see src/gpu/gpu.h for the binding convention):
 *  - Every tensor is bound as raw 32-bit words, `array<u32>` (read-only) or `array<u32>`
 *    read_write for outputs; op_wgsl_loader() generates a function that loads element i of any
 *    dtype as f32 / i32 / u32, and op_wgsl_storer() one that stores (outputs of 1- and 2-byte
 *    dtypes are written a whole word at a time: 4 / 2 elements per invocation, never a partial
 *    word, so invocations never race on a word).
 *  - Outputs are always contiguous (freshly allocated). Inputs may be strided views: pass their
 *    strides in the uniform (op_layout_params) and index with them.
 *  - op_bind() binds only the part of a storage buffer a tensor reaches, at an aligned offset, and
 *    reports the element offset the kernel must add. Work over more than one binding's worth of
 *    bytes is split by the op along its outermost dimension (op_rows_per_chunk()).
 *  - Kernels run f32 arithmetic for f16/bf16 (the H200 build has no shader-f16); a kernel may use
 *    native f16 when wgt_gpu_has_f16(ctx).
 */
#ifndef WGT_OPS_OPS_H
#define WGT_OPS_OPS_H

#include <stdio.h>

#include "cpu/cpu.h"
#include "gpu/gpu.h"
#include "tensor/tensor.h"

/* ---- host copies for the reference (tensor_ops.c) -------------------------------------------- */

/* Host copies of tensors for the CPU reference: a wgt_cpu_tensor with t's layout over a host copy of
 * the storage range it reaches. Free with wgt_host_view_free. On a CPU context no copy is made. */
typedef struct wgt_host_view {
    wgt_cpu_tensor t;
    void *owned;
} wgt_host_view;
wgt_status wgt_host_view_get(const wgt_tensor *t, wgt_host_view *out);
void wgt_host_view_free(wgt_host_view *v);
/* After the reference wrote into v (a view of out made by wgt_host_view_get), send it to the device. */
wgt_status wgt_host_view_put(const wgt_tensor *out, const wgt_host_view *v);

/* ---- calling conventions --------------------------------------------------------------------- */

#define OP_BEGIN(first, out)                                                                       \
    if (!(first) || !(out)) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: NULL argument", __func__); \
    *(out) = NULL;                                                                                 \
    wgt_context *ctx = (first)->st->ctx;                                                           \
    {                                                                                              \
        wgt_status begin_st_ = wgt_ctx_check(ctx);                                                 \
        if (begin_st_) return begin_st_;                                                           \
    }

wgt_status op_fail(wgt_context *ctx, wgt_status st, const char *fmt, ...) WGT_PRINTF(3, 4);
/* On success hand `result` to *out; on failure free it. Returns st. */
wgt_status op_finish(wgt_status st, wgt_tensor *result, wgt_tensor **out);
/* All tensors on one context? (a status naming the op if not) */
/* The diagonal `offset` of dims (d1, d2) of t as a view (src/ops/misc.c). */
wgt_status op_diagonal_view(const wgt_tensor *t, int64_t offset, int d1, int d2, wgt_tensor **out);

wgt_status op_same_context(const char *op, const wgt_tensor *const *ts, int n);
/* wgt_tensor_assign without its autograd check, for an op writing its own fresh result in parts;
 * bumps the destination storage's version as every in-place write does. */
wgt_status op_assign(wgt_tensor *dst, const wgt_tensor *src);
/* wgt_scatter_add into y itself (contiguous; a fresh result of the caller's: no autograd check, not
 * recorded); bumps y's storage version. */
wgt_status op_scatter_add_inplace(wgt_tensor *y, int dim, const wgt_tensor *index, const wgt_tensor *src);
/* Embedding backward on the GPU: dW [V, D] (f32, fresh) from ids [N] (i32) and g [N, D] (f32), each
 * row the sum of g's rows with its id in position order (a stable sort of the ids, then one segment
 * sum per id: no one-hot, no atomics, the same bits every run). Not recorded. op_embedding_backward_ok
 * says whether it runs here (a GPU context, i32 ids, sizes within u32); else use index_add. */
int op_embedding_backward_ok(const wgt_tensor *ids, const wgt_tensor *g);
wgt_status op_embedding_backward(const wgt_tensor *ids, const wgt_tensor *g, int64_t V, wgt_tensor **out);
/* sdpa's backward row passes (attention_grad.c, WGT_SDPA_GRAD=fused, the default: op_sdpa_rows_on), fresh f32
 * results, not recorded. op_sdpa_rows_ok: t is f32, contiguous, within u32 elements, on a GPU
 * context. op_sdpa_probs: softmax over the last dim of scale s, keys past off + (row % lq) (and at
 * or before it minus window, window > 0) hidden when causal. op_sdpa_dscores: scale pr (dp -
 * sum(dp pr)) along the last dim (softmax's backward, scaled). */
int op_sdpa_rows_on(void);
int op_sdpa_rows_ok(const wgt_tensor *t);
wgt_status op_sdpa_probs(const wgt_tensor *s, double scale, int causal, int64_t lq, int64_t off, int64_t window,
                         wgt_tensor **out);
wgt_status op_sdpa_dscores(const wgt_tensor *pr, const wgt_tensor *dp, double scale, wgt_tensor **out);
/* Layer / RMS norm's backward over rows of R (norm_grad.c, WGT_NORM_GRAD=fused, the default):
 * *dx and, when gw is given, *gw = g xhat, fresh f32 of x's shape, not recorded; rms 1: RMS norm.
 * op_norm_rows_ok: x, g (and w, R elements) f32, contiguous, within u32 elements, on a GPU context. */
int op_norm_rows_on(void);
int op_norm_rows_ok(const wgt_tensor *x, const wgt_tensor *g, const wgt_tensor *w, int64_t R);
wgt_status op_norm_backward_rows(const wgt_tensor *x, const wgt_tensor *g, const wgt_tensor *w, int64_t R, double eps,
                                 int rms, wgt_tensor **dx, wgt_tensor **gw);
/* An activation's gradient g f'(x) in one pass (elementwise_grad.c, WGT_ACT_GRAD=fused, the default: gelu_tanh, silu),
 * fresh f32, not recorded. op_act_grad_ok: the op is one of those, the variable says fused, x and g
 * f32, contiguous, of one shape, on a GPU context. */
int op_act_grad_ok(wgt_unary_op op, const wgt_tensor *x, const wgt_tensor *g);
wgt_status op_act_grad(wgt_unary_op op, const wgt_tensor *x, const wgt_tensor *g, wgt_tensor **out);
/* Normalise a possibly negative dim for ndim dims; WGT_ERR_SHAPE naming op if out of range. */
wgt_status op_dim(wgt_context *ctx, const char *op, int *dim, int ndim);

/* ---- dtypes and shapes ---------------------------------------------------------------------- */

int op_is_float(wgt_dtype d);          /* f32, f16, bf16 */
int op_is_int(wgt_dtype d);            /* i32, u32, i8, u8, bool, i64 */
wgt_dtype op_promote(wgt_dtype a, wgt_dtype b); /* the lattice written in wgt.h */
/* NumPy broadcasting of two shapes; WGT_ERR_SHAPE naming op if they do not broadcast. */
wgt_status op_broadcast_shape(wgt_context *ctx, const char *op, const wgt_layout *a, const wgt_layout *b, int *ndim,
                              int64_t *shape);
/* The layout of t broadcast to (ndim, shape): strides 0 on broadcast dims. */
void op_broadcast_layout(const wgt_layout *t, int ndim, const int64_t *shape, wgt_layout *out);

/* ---- choosing the path ----------------------------------------------------------------------- */

/* 1: run the GPU kernel. 0: run the reference, because the context is the CPU reference or because
 * `gpu_supported` is 0 (then a one-time warning names op and dtype on stderr, and with WGT_STRICT=1
 * op_fallback_status() is WGT_ERR_UNSUPPORTED with a message). */
int op_use_gpu(wgt_context *ctx, const char *op, wgt_dtype dtype, int gpu_supported);
wgt_status op_fallback_status(wgt_context *ctx, const char *op, wgt_dtype dtype, int gpu_supported);

/* Run a reference function over host views of the inputs and outputs (downloaded from and
 * uploaded back to the device on a GPU context; direct on a CPU context). */
typedef wgt_status (*op_ref_fn)(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out);
wgt_status op_reference(wgt_context *ctx, op_ref_fn fn, void *arg, const wgt_tensor *const *in, int n_in,
                        wgt_tensor *const *out, int n_out);

/* ---- WGSL generation ------------------------------------------------------------------------- */

/* Append to buf (cap bytes) a WGSL function `fn NAME(i: u32) -> CT` that loads element i (in
 * elements from the start of binding BUF, an array<u32>) of dtype dt as compute type ct
 * ("f32", "i32" or "u32"). i64 loads its low word (exact for |v| < 2^31). With ct "i64" it returns
 * vec2<u32> (lo, hi) exactly, any dtype converted as C converts it; the kernel needs op_wgsl_lib_i64(). */
void op_wgsl_loader(char *buf, size_t cap, const char *name, const char *binding, wgt_dtype dt, const char *ct);
/* Append `fn NAME(i: u32) -> VIA_TYPE` that loads element i of binding BUF as op_wgsl_loader does
 * (as ct) and returns VIA(that value): VIA names a WGSL function of the kernel's libraries (e.g.
 * elementwise_ops.wgsl's ew_truth, a where condition as 0 or 1; lib_i64.wgsl's i64_to_f32). */
void op_wgsl_loader_via(char *buf, size_t cap, const char *name, const char *binding, wgt_dtype dt, const char *ct,
                        const char *via, const char *via_type);
/* Append `fn NAME(a: ARG_TYPE, b: ARG_TYPE, c: ARG_TYPE) -> RET_TYPE { INIT return
 * RET_TYPE(WRAP(CALLEE(OPX, a, b, c))); }` (WRAP NULL: none): the one line that calls an op function
 * of a kernel library by name (elementwise's compute(), each stage of a fused chain). The names
 * are what varies; the functions' text lives in the .wgsl file. */
void op_wgsl_call(char *buf, size_t cap, const char *name, const char *init, const char *arg_type, const char *ret_type,
                  const char *callee, const char *wrap, const char *opx);
/* Append `fn NAME(v: u32) -> array<vec4<f32>, 2>`: 8 elements of float dtype dt from vec4 index v
 * of binding BUF (an array<vec4<u32>>): two vec4s for f32, one for f16 / bf16. */
void op_wgsl_vec8_loader(char *buf, size_t cap, const char *name, const char *binding, wgt_dtype dt);
/* Append matmul_regs.wgsl's entry `unrolled`'s sums (src/ops/matmul.c, WGT_MATMUL_TILE_UNROLL): the
 * TM x TN outputs of an invocation as named vec4s c_I_G (row I, columns 4 G .. 4 G + 3), never an
 * array (one the driver does not unroll every loop over spills: 8 x 8 ran at 3% of the H200's
 * peak), with acc_zero(), acc_step(at, bt) (one k step: BK rows of As from at, Bs from bt, every
 * fma a statement) and acc_out() (each sum through the kernel's out4). */
void op_wgsl_tile_sums(char *buf, size_t cap, int tm, int tn);
/* How many elements of dt share one 32-bit word (4 for 1-byte, 2 for 2-byte, 1 otherwise). */
int op_pack(wgt_dtype dt);
/* Append `fn NAME(w: u32, v: array<CT, 4>)` that writes word w of binding BUF from op_pack(dt)
 * values (i64: word pair 2w, 2w+1 from v[0], sign-extended). With ct "i64", v is array<vec2<u32>, 4>
 * of 64-bit values (src/kernels/lib_i64.wgsl), stored exactly in i64 and converted as C converts
 * them otherwise. */
void op_wgsl_storer(char *buf, size_t cap, const char *name, const char *binding, wgt_dtype dt, const char *ct);
/* The WGSL type name of a compute type for dtype: "f32" for floats, "u32" for u32, else "i32". */
const char *op_compute_type(wgt_dtype dt);

/* Kernels keyed by a small key (wgt_gpu_kernel_keyed) are declared in gpu/gpu.h. */
/* The workgroup size for one-dimensional kernels: 256, or the device's limit when lower
 * (compatibility mode's default is 128). Generated kernels take it as `const WG: u32`. */
uint32_t op_workgroup_size(wgt_context *ctx);
/* The subgroup-matrix shape the tiles use (f16 x f16 -> f32, each side dividing 32): 16x8x8 first
 * (measured fastest with the matmul tiles, bench/results/h200/prefill_ab.txt), then NVIDIA's other
 * tensor-core shapes (M 16, N 8 or 16), the largest first, then any. 0 when the adapter has none. */
int op_sgmatrix_pick(wgt_context *ctx, int *m, int *n, int *k);
/* 1 when matrix-vector reductions may sum through subgroups: granted, and no wider than the 32
 * invocations that share an output row (matmul_gemv, fused_linear, fused_linear_qkv_rope,
 * qlinear's gemv). */
int op_row_subgroups(wgt_context *ctx);
/* Append the row sum of the matrix-vector kernels (src/kernels/lib_rowsum.wgsl's section): with sg
 * (op_row_subgroups), `enable subgroups;` (so buf must be empty: an enable comes first) and
 * subgroupAdd; else the workgroup-memory tree alone. Defines HAS_SG, rsum(x), rsize(), row_share
 * and row_total; the kernel declares ROW, row_rsum, red and p.tpr (the file's header). */
void op_wgsl_row_subgroups(char *buf, size_t cap, int sg);
/* The subgroup size reductions shuffle over (reduce, norm): the device's when it is fixed (min ==
 * max), a power of two in [2, 64] and subgroups are granted; else 1 (the workgroup-memory tree
 * alone). */
uint32_t op_shuffle_subgroup(wgt_context *ctx);
/* The batch dims of a chunk merged where one stride walks them (size-1 dims dropped): *simple is 1
 * with *stride the step between planes when they reduce to one dim (the kernel then skips
 * layout_index). Pooling and resampling kernels take both as parameters. */
void op_plane_stride(const wgt_layout *lead, uint32_t *simple, uint32_t *stride);

/* ---- bindings and parameters ---------------------------------------------------------------- */

/* Bind the storage words holding elements [lo, hi] (storage element indices, inclusive) of t's
 * storage at an aligned offset; *base gets the element index the binding starts at (so the kernel
 * reads element e at e - base). */
wgt_status op_bind(const wgt_tensor *t, int64_t lo, int64_t hi, wgt_binding *b, int64_t *base);
/* Bind all of t's reachable storage. */
wgt_status op_bind_all(const wgt_tensor *t, wgt_binding *b, int64_t *base);
/* Bind t's whole storage (base 0) when it fits one binding, else as op_bind_all. For views that move
 * every call (a KV cache's row or prefix at the token's position): the binding, and so the cached
 * bind group, stays the same from token to token instead of a new bind group per call. */
wgt_status op_bind_storage(const wgt_tensor *t, wgt_binding *b, int64_t *base);
/* For a captured decode step (one causal query row per head over Lk keys, Hq query and Hkv key
 * heads, no mask): the split length a captured step records for Lk keys. A step captured at
 * one key count replays exactly at every other with the same value (wgt_sdpa records both the
 * short-cache kernel and the split over the cache's capacity, gated on the key count). */
int64_t op_sdpa_decode_bucket(int64_t Hq, int64_t Hkv, int64_t Lk);
/* Whether sdpa of head dims D, Dv with several query rows and half_tiles 0 takes the
 * subgroup-matrix tiles (src/kernels/attention_tc.wgsl; WGT_ATTENTION_TC), and their query rows and
 * keys a block. */
int op_sdpa_tc_tiles(wgt_context *ctx, int64_t D, int64_t Dv, int *bq, int *bkv);
/* Lowest and highest storage element index t's layout reaches (hi < lo when t is empty). */
void op_extent(const wgt_layout *l, int64_t *lo, int64_t *hi);
/* A 1-D tensor of n elements of dt holding data, shared with every earlier call for the same bytes
 * on this context (a few small tables, e.g. rotary frequencies, kept for the context's life; a
 * CPU context or a table over 16 KiB gets a fresh tensor). For tables an op would otherwise upload
 * on every call: each upload costs a pool buffer and a copy that ends the open compute pass. The
 * tensor is read-only: never write to it. Free *out as any tensor. */
wgt_status op_const_tensor(wgt_context *ctx, wgt_dtype dt, int64_t n, const void *data, wgt_tensor **out);
/* How many rows of dim 0 fit one binding for every tensor given (>= 1), or 0 if one row is too large. */
int64_t op_rows_per_chunk(wgt_context *ctx, const wgt_layout *const *ls, int n);

/* A uniform block describing up to 8 dims of a strided layout, 16-byte aligned as WGSL wants:
 *   struct Layout { shape: array<vec4<u32>, 2>, strides: array<vec4<u32>, 2> }  (see index.wgsl)
 * plus, separately, the element offset. Shapes/strides beyond 2^32 are refused. */
typedef struct op_layout_params {
    uint32_t shape[8];
    uint32_t strides[8];
} op_layout_params;
wgt_status op_layout_params_fill(wgt_context *ctx, const wgt_layout *l, op_layout_params *p);

/* Workgroup counts for `groups` workgroups spread over x then y (the per-dimension limit);
 * kernels compute their linear workgroup index as wid.x + wid.y * num_workgroups.x. */
void op_grid(wgt_context *ctx, uint64_t groups, uint32_t *gx, uint32_t *gy);

/* Linear layers over 2 .. OP_ROWS_MAX rows (src/ops/matmul_rows.c, src/kernels/matmul_rows.wgsl):
 * out[out_off + m * out_stride + n] = alpha * x[m, :] . W[n, :] + beta * c[c_off + m * c_sm + n * c_sn]
 * (c when has_c). x rows of K elements contiguous (K % 8 == 0), at x_off + m * x_stride; weight rows
 * at w_off + n * w_stride; both in vec4 units of their bindings, weight blocks in bytes. */
#define OP_ROWS_MAX 64
typedef struct op_rows_params {
    uint32_t M, N, K, tpr; /* tpr: set by op_rows_run */
    uint32_t x_off, x_stride, w_off, w_stride;
    uint32_t c_off, c_sm, c_sn, has_c;
    float alpha, beta;
    uint32_t out_off, out_stride;
    uint32_t nmb, pad[3]; /* nmb: set by op_rows_run */
} op_rows_params;
/* 1 when a product of M rows (min_rows <= M <= OP_ROWS_MAX) should take op_rows_run
 * (WGT_MATMUL_ROWS=0 turns it off). On the H200 (bench/results/h200/matmul_rows_ab.txt) it beat
 * the f16 GEMV from 5 rows and the Q8_0 one from 9, and lost below. */
int op_rows_take(wgt_context *ctx, int64_t M, int64_t min_rows);
/* Dispatch it: x of float dtype xt, weights of float dtype wt or WGT_U8 blocks of format qt (one
 * wgt_qlinear_gpu_type takes), c of dtype ct; bindings x, weights, c (any when !has_c), out (f32). */
wgt_status op_rows_run(wgt_context *ctx, wgt_dtype xt, wgt_dtype wt, wgt_ftype qt, wgt_dtype ct, op_rows_params *p,
                       const wgt_binding *bind);
/* Append section SECTION of src/kernels/FILE.wgsl: the lines after the line "// ---- SECTION ----"
 * up to the next "// ---- " line (fixed WGSL that differs per variant, e.g. per accumulation
 * type, kept in a kernel file rather than in C strings). 0 if absent or buf too small. */
int op_wgsl_section(char *buf, size_t cap, const char *file, const char *section);
/* Append the operations on CT for dtype dt (src/kernels/lib_ct.wgsl: ct_gt, ct_ge, ct_f32, ct_of,
 * is_nan_ct), CT being op_compute_type(dt), or vec2<u32> words for i64. 0 if buf is too small. */
int op_wgsl_ct(char *buf, size_t cap, wgt_dtype dt);
/* Shared WGSL text (src/kernels/lib_index.wgsl): coordinates and strided index helpers. */
const char *op_wgsl_lib(void);
/* Shared WGSL text (src/kernels/lib_i64.wgsl): exact i64 arithmetic on vec2<u32> (lo, hi) words. */
const char *op_wgsl_lib_i64(void);

/* The block decoders of src/kernels/qlinear.wgsl (rd32 .. piece, reading binding `w` by FMT), for
 * kernels that dequantise GGUF blocks (its "decoders" section); NULL if the file lacks it. *len gets
 * their length. */
const char *op_qlinear_decoders(size_t *len);
/* y [tokens, rows] f32 (new, contiguous) = x [tokens, cols] (f32, contiguous, offset % 4 == 0)
 * W^T + bias (f32 [rows] contiguous, or NULL), W a u8 [rows, row_bytes] tensor of GGUF blocks of
 * `type` (src/ops/qlinear.c), through src/kernels/matmul_tc.wgsl's subgroup-matrix tiles with the
 * blocks dequantised into them (src/ops/matmul.c). *done 0 (and WGT_OK) where those tiles do not
 * apply (the device, the sizes, WGT_MATMUL_TC): the caller runs its own kernels. */
wgt_status op_matmul_tc_quant(wgt_context *ctx, int type, const wgt_tensor *x, const wgt_tensor *w,
                              const wgt_tensor *bias, int64_t tokens, int64_t rows, int64_t cols, wgt_tensor *y,
                              int *done);

#endif
