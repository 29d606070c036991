/* Elementwise ops: unary, binary (broadcast), where, cast, copy. One generic WGSL kernel
 * (src/kernels/elementwise.wgsl) specialised per dtype signature; the op is a uniform value, so
 * all unary ops of one dtype share one pipeline. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/elementwise.h"
#include "ops/ops.h"
#include "tensor/record.h"

/* Everything the generated prelude depends on: the pipeline cache's key (no padding bytes). */
typedef struct ew_key {
    uint8_t fam, ci, d[3], out, vec, scalar; /* ci: CI_*; vec: 0 strided, 1 vec4, 2 packed; scalar: bit i */
    uint8_t mixed, pad[3];                    /* vec path: bit i, input i's elements differ in size */
    uint32_t wg;
} ew_key;

static const char *ci_name(int ci) { return (const char *[]){"f32", "i32", "u32", "i64"}[ci]; }
static int ci_of(wgt_dtype dt)
{
    return op_is_float(dt) ? CI_F32 : dt == WGT_U32 ? CI_U32 : dt == WGT_I64 ? CI_I64 : CI_I32;
}

/* Does the kernel for key k touch 64-bit values (then it includes lib_i64.wgsl and the i64 part of
 * elementwise_ops.wgsl, and never takes the vec4 path)? */
static int key_wide(uint8_t ci, const uint8_t *d, uint8_t out)
{
    return ci == CI_I64 || d[0] == WGT_I64 || d[1] == WGT_I64 || d[2] == WGT_I64 || out == WGT_I64;
}
/* The compute() result type: 64-bit words when the values are (the storer converts them as C
 * does), else the output dtype's compute type. */
static const char *co_type(int ci, wgt_dtype out)
{
    if (out == WGT_I64 || (ci == CI_I64 && !op_is_float(out))) return "i64";
    return op_compute_type(out);
}

/* clamp's bounds for integers, as the reference takes them: ceil(lo) and floor(hi), saturated to
 * the compute type (i32 or u32 bits); a NaN bound clamps nothing. */
static void int_bounds(double lo, double hi, int is_u32, uint32_t *out)
{
    double min = is_u32 ? 0 : -2147483648.0, max = is_u32 ? 4294967295.0 : 2147483647.0;
    lo = isnan(lo) ? min : ceil(lo), hi = isnan(hi) ? max : floor(hi);
    lo = lo < min ? min : lo > max ? max : lo;
    hi = hi < min ? min : hi > max ? max : hi;
    out[0] = is_u32 ? (uint32_t)lo : (uint32_t)(int32_t)lo;
    out[1] = is_u32 ? (uint32_t)hi : (uint32_t)(int32_t)hi;
}

/* The name of the op function (elementwise_ops.wgsl: fn(op, a, b, c)) of family fam over values
 * of compute type ci ("f32", "i32", "u32", or "i64" for 64-bit words) into output dtype out_dt. */
static const char *ew_op_name(ew_family fam, const char *ci, wgt_dtype out_dt)
{
    int t = !strcmp(ci, "f32") ? 0 : !strcmp(ci, "i32") ? 1 : !strcmp(ci, "u32") ? 2 : 3;
    static const char *const names[3][4] = {{"ew_unary_f", "ew_unary_i", "ew_unary_u", "ew_unary_l"},
                                            {"ew_binary_f", "ew_binary_i", "ew_binary_u", "ew_binary_l"},
                                            {"ew_where_f", "ew_where_i", "ew_where_u", "ew_where_l"}};
    if (fam != EW_CAST) return names[fam][t];
    if (t == 3) /* from i64: to a float, rounded once to its significant bits */
        return out_dt == WGT_F32 ? "ew_cast_l_f32" : out_dt == WGT_F16 ? "ew_cast_l_f16"
               : out_dt == WGT_BF16 ? "ew_cast_l_bf16" : "ew_cast_l";
    if (t == 0 && out_dt == WGT_I64) return "ew_cast_f_l";
    if (t == 0 && op_is_int(out_dt) && out_dt != WGT_BOOL) /* float -> int, saturated */
        return out_dt == WGT_U32 ? "ew_cast_f_u32" : out_dt == WGT_I32 ? "ew_cast_f_i32"
               : out_dt == WGT_I8 ? "ew_cast_f_i8" : "ew_cast_f_u8";
    return (const char *[]){"ew_cast_f", "ew_cast_i", "ew_cast_u"}[t];
}

/* op_line for 64-bit values (CI_I64), or for a cast from a float to i64: the op function's value
 * as the 64-bit words or the float the storer takes. */
static void compute_fn_i64(char *buf, size_t cap, ew_family fam, int ci, wgt_dtype out_dt)
{
    const char *name = ew_op_name(fam, ci == CI_I64 || fam != EW_CAST ? "i64" : "f32", out_dt);
    op_wgsl_call(buf, cap, "op_line", "", "CI", "CO", name, NULL, "p.op");
}

/* clamp's bounds for i64 as (lo word, hi word) pairs ceil(lo), floor(hi) into out[0], out[2] and
 * out[1], out[3]. The reference compares (double)x with lo and hi; that is the exact comparison
 * with ceil(lo) and floor(hi) when they lie within +-2^53 (or are infinite away from x, or NaN):
 * 0 for other bounds, which the reference runs. */
static int int64_bounds(double lo, double hi, uint32_t *out)
{
    const double exact = 9007199254740992.0; /* 2^53 */
    if (!(isnan(lo) || lo == -INFINITY || fabs(lo) < exact) || !(isnan(hi) || hi == INFINITY || fabs(hi) < exact))
        return 0;
    int64_t l = isnan(lo) || lo == -INFINITY ? INT64_MIN : (int64_t)ceil(lo);
    int64_t h = isnan(hi) || hi == INFINITY ? INT64_MAX : (int64_t)floor(hi);
    out[0] = (uint32_t)(uint64_t)l, out[2] = (uint32_t)((uint64_t)l >> 32);
    out[1] = (uint32_t)(uint64_t)h, out[3] = (uint32_t)((uint64_t)h >> 32);
    return 1;
}

/* Append fn FNAME(a: CI_T, b: CI_T, c: CI_T) -> CO_T, one op of family fam over values of 32-bit
 * compute type ci (named ci_t in WGSL: "CI" or "f32"), into output dtype out_dt (co_t), with op
 * code expression opx ("p.op", or a constant in a fused kernel) and statements init first
 * (setting q, the op parameters of elementwise_ops.wgsl; "" for op_line, whose caller compute()
 * sets q). This picks the names; ops.c's op_wgsl_call writes the line. op_line is this with the
 * aliases; elementwise_fuse.c makes one per stage of a fused chain. */
void ew_op_fn(char *buf, size_t cap, const char *fname, const char *init, int family, const char *ci,
              const char *ci_t, const char *co_t, wgt_dtype out_dt, const char *opx)
{
    /* a float result into bool is true when nonzero or NaN (C, PyTorch) */
    static const char *const to_bool[] = {"ew_bool_f", "ew_bool_i", "ew_bool_u"};
    const char *wrap = out_dt == WGT_BOOL ? to_bool[ci[0] == 'f' ? 0 : ci[0] == 'u' ? 2 : 1] : NULL;
    op_wgsl_call(buf, cap, fname, init, ci_t, co_t, ew_op_name((ew_family)family, ci, out_dt), wrap, opx);
}

/* op_line, which compute() (elementwise_ops.wgsl's "compute" section) calls after setting q */
static void compute_fn(char *buf, size_t cap, ew_family fam, const char *ci, wgt_dtype out_dt)
{
    ew_op_fn(buf, cap, "op_line", "", fam, ci, "CI", "CO", out_dt, "p.op");
}

/* Append loader NAME of element i of binding BIND (dtype dt) as compute type ci, in a kernel with
 * 64-bit values: i64 inputs of 32-bit compute types convert from both words (to f32 rounded to
 * nearest; to an integer type as 0 or 1, since only where's condition loads that way). */
static void loader_wide(char *pre, size_t cap, const char *name, const char *bind, wgt_dtype dt, int ci, int cond)
{
    if (ci == CI_I64 && cond && op_is_float(dt)) /* a float condition: true when nonzero or NaN */
        op_wgsl_loader_via(pre, cap, name, bind, dt, "f32", "ew_truth_l", "CI");
    else if (ci == CI_I64 || dt != WGT_I64)
        op_wgsl_loader(pre, cap, name, bind, dt, ci_name(ci));
    else
        op_wgsl_loader_via(pre, cap, name, bind, dt, "i64",
                           ci == CI_F32 ? "i64_to_f32" : ci == CI_U32 ? "ew_l_truth_u" : "ew_l_truth_i", "CI");
}

/* Does input i's loader take where's condition by its truth (a float condition of integer values:
 * converting it would make 0.5 false)? */
static int cond_truth(const ew_key *k, int i) { return k->fam == EW_WHERE && i == 0 && op_is_float((wgt_dtype)k->d[i]) && k->ci != CI_F32; }

/* Append loader NAME (32-bit compute type ci) of element i of BIND; truth: cond_truth. */
static void loader_32(char *pre, size_t cap, const char *name, const char *bind, wgt_dtype dt, int ci, int truth)
{
    if (truth) op_wgsl_loader_via(pre, cap, name, bind, dt, "f32", ci == CI_U32 ? "ew_truth_u" : "ew_truth_i", "CI");
    else op_wgsl_loader(pre, cap, name, bind, dt, ci_name(ci));
}

/* The prelude of a kernel with 64-bit values (strided path only). */
static char *ew_prelude_wide(const ew_key *k, char *pre, size_t cap)
{
    const char *lib = op_wgsl_lib(), *lib64 = op_wgsl_lib_i64(), *ops = wgt_gpu_kernel_text("elementwise_ops");
    wgt_dtype out = (wgt_dtype)k->out;
    const char *co = co_type(k->ci, out);
    snprintf(pre, cap, "%s\n%s\n%s\nalias CI = %s;\nalias CO = %s;\nconst PACK: u32 = %du;\nconst WG: u32 = %uu;\n",
             lib ? lib : "", lib64 ? lib64 : "", ops ? ops : "", k->ci == CI_I64 ? "vec2<u32>" : ci_name(k->ci),
             !strcmp(co, "i64") ? "vec2<u32>" : co, op_pack(out), k->wg);
    const char *names[3] = {"ld0", "ld1", "ld2"}, *binds[3] = {"in0", "in1", "in2"};
    for (int i = 0; i < 3; i++)
        loader_wide(pre, cap, names[i], binds[i], (wgt_dtype)k->d[i], k->ci, k->fam == EW_WHERE && i == 0);
    op_wgsl_storer(pre, cap, "st", "out", out, co);
    if (k->ci == CI_I64 || out == WGT_I64) compute_fn_i64(pre, cap, (ew_family)k->fam, k->ci, out);
    else compute_fn(pre, cap, (ew_family)k->fam, ci_name(k->ci), out);
    return pre;
}

/* ---- the packed contiguous path (elementwise_pack.wgsl) --------------------------------------
 * Its unit() is fixed WGSL in the kernel file; the prelude gives each input's dtype (D0..D2, the
 * values of wgt_dtype), element size (Z0..Z2), whether it is broadcast (S0..S2) and whether it
 * loads by its truth (T0..T2, cond_truth), and the output's dtype (DO). */
static void ew_pack_consts(const ew_key *k, char *pre, size_t cap)
{
    size_t used = strlen(pre);
    for (int i = 0; i < 3; i++) {
        wgt_dtype dt = (wgt_dtype)k->d[i];
        used += snprintf(pre + used, used < cap ? cap - used : 0,
                         "const D%d: u32 = %du;\nconst Z%d: u32 = %du;\nconst S%d: bool = %s;\nconst T%d: bool = %s;\n", i,
                         (int)dt, i, (int)wgt_dtype_size(dt), i, k->scalar >> i & 1 ? "true" : "false", i,
                         cond_truth(k, i) ? "true" : "false");
    }
    snprintf(pre + used, used < cap ? cap - used : 0, "const DO: u32 = %du;\n", (int)k->out);
}

static char *ew_prelude(void *arg)
{
    const ew_key *k = arg;
    size_t cap = 131072; /* the i64 kernels paste lib_index, lib_i64 and all of elementwise_ops.wgsl */
    char *pre = malloc(cap);
    if (!pre) return NULL;
    if (key_wide(k->ci, k->d, k->out)) return ew_prelude_wide(k, pre, cap);
    const char *lib = op_wgsl_lib(), *ops = wgt_gpu_kernel_text("elementwise_ops");
    const char *ci = ci_name(k->ci);
    wgt_dtype out = (wgt_dtype)k->out;
    /* the 32-bit kernels leave out the i64 part of elementwise_ops.wgsl */
    const char *cut = ops ? strstr(ops, "\n// ---- i64 ----") : NULL;
    int ops_len = ops ? (cut ? (int)(cut - ops) : (int)strlen(ops)) : 0;
    snprintf(pre, cap, "%s\n%.*s\nalias CI = %s;\nalias CO = %s;\nconst PACK: u32 = %du;\nconst WG: u32 = %uu;\n",
             lib ? lib : "", ops_len, ops ? ops : "", ci, op_compute_type(out), op_pack(out), k->wg);
    size_t used = strlen(pre);
    if (k->vec == 2) {
        ew_pack_consts(k, pre, cap);
    } else if (k->vec) {
        for (int i = 0; i < 3; i++) {
            used += snprintf(pre + used, cap - used, "const S%d: bool = %s;\nconst M%d: bool = %s;\nconst E%d: u32 = %du;\n",
                             i, k->scalar >> i & 1 ? "true" : "false", i, k->mixed >> i & 1 ? "true" : "false", i,
                             4 * op_pack((wgt_dtype)k->d[i]));
            char name[8], bind[8];
            snprintf(name, sizeof name, "lv%d", i);
            snprintf(bind, sizeof bind, "w%d", i);
            loader_32(pre, cap, name, bind, (wgt_dtype)k->d[i], k->ci, cond_truth(k, i));
            used = strlen(pre);
        }
        op_wgsl_storer(pre, cap, "sv", "wo", out, op_compute_type(out));
    } else {
        loader_32(pre, cap, "ld0", "in0", (wgt_dtype)k->d[0], k->ci, cond_truth(k, 0));
        op_wgsl_loader(pre, cap, "ld1", "in1", (wgt_dtype)k->d[1], ci);
        op_wgsl_loader(pre, cap, "ld2", "in2", (wgt_dtype)k->d[2], ci);
        op_wgsl_storer(pre, cap, "st", "out", out, op_compute_type(out));
    }
    compute_fn(pre, cap, (ew_family)k->fam, ci, out);
    /* compute() (the 64-bit kernels have it with the whole of elementwise_ops.wgsl) */
    if (!op_wgsl_section(pre, cap, "elementwise_ops", "compute")) {
        free(pre);
        return NULL;
    }
    return pre;
}

static wgt_status ew_kernel(wgt_context *ctx, const ew_key *key, wgt_kernel **k)
{
    const char *file = key->vec == 2 ? "elementwise_pack" : key->vec ? "elementwise_vec" : "elementwise";
    return wgt_gpu_kernel_keyed(ctx, file, key, sizeof *key, ew_prelude,
                                (void *)key, "main", NULL, 0, k);
}

/* ---- running --------------------------------------------------------------------------------- */

/* Bind t's elements [lo, hi] like op_bind, widened to whole vec4s when the buffer has the room
 * (the vec4 kernel reads the last vec4 whole); 0 when it has not. */
static int bind_vec4(const wgt_tensor *t, int64_t lo, int64_t hi, wgt_binding *b, int64_t *base, wgt_status *st)
{
    if ((*st = op_bind(t, lo, hi, b, base))) return 0;
    uint64_t end = (b->offset + b->size + 15) & ~15ull;
    if (end > b->buffer->size) return 0;
    if (end - b->offset > wgt_gpu_limits(t->st->ctx)->max_storage_buffer_binding_size) return 0;
    b->size = end - b->offset;
    return 1;
}

/* The contiguous path applies: every input is laid out like the output (contiguous, elements of the
 * output's size, starting on a 16-byte boundary) or is one element broadcast (all strides 0). */
static int ew_vec_ok(const wgt_layout *lin, const wgt_tensor *const *src, int n_in, const wgt_tensor *out,
                     uint8_t *scalar, uint8_t *mixed)
{
    size_t es = wgt_dtype_size(out->l.dtype);
    wgt_layout c;
    wgt_layout_contiguous(&c, out->l.dtype, out->l.ndim, out->l.shape);
    *scalar = 0, *mixed = 0;
    for (int i = 0; i < 3; i++) {
        const wgt_layout *l = &lin[i];
        int zero = 1, same = 1;
        for (int d = 0; d < l->ndim; d++) {
            if (l->shape[d] == 1) continue;
            zero &= l->strides[d] == 0;
            same &= l->strides[d] == c.strides[d];
        }
        size_t ies = wgt_dtype_size(src[i < n_in ? i : 0]->l.dtype);
        if (zero) *scalar |= (uint8_t)(1u << i);
        else if (!same || ies > 4) return 0;
        else if (ies != es || (l->offset * es) % 16) *mixed |= (uint8_t)(1u << i); /* a vec4 per element */
    }
    return 1;
}

/* Output elements per dispatch of the contiguous path: whole multiples of the binding offset
 * alignment, so that every chunk of every tensor starts where a binding can. */
static int64_t ew_vec_chunk(wgt_context *ctx, size_t es)
{
    uint64_t limit = wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
    uint64_t align = wgt_gpu_limits(ctx)->min_storage_buffer_offset_alignment;
    if (align < 16) align = 16;
    uint64_t bytes = limit > 2 * align ? (limit - 2 * align) / align * align : align;
    if (bytes / es > (1ull << 30)) bytes = (1ull << 30) * es; /* u32 arithmetic in the kernel */
    return (int64_t)(bytes / es);
}

/* The packed path (elementwise_pack.wgsl) applies to a contiguous case (ew_vec_ok) whose inputs
 * each start on a 16-byte boundary or are broadcast, unless it is the plain 32-bit case (every
 * input 4 bytes like the output, or broadcast), which keeps elementwise_vec.wgsl. */
static int ew_pack_ok(const wgt_layout *lin, const wgt_tensor *const *in, int n_in, const wgt_tensor *out,
                      uint8_t scalar)
{
    size_t es = wgt_dtype_size(out->l.dtype);
    int packed = es != 4;
    for (int i = 0; i < 3; i++) {
        if (scalar >> i & 1) continue;
        size_t ies = wgt_dtype_size(in[i < n_in ? i : 0]->l.dtype);
        if ((lin[i].offset * ies) % 16) return 0;
        packed |= ies != es;
    }
    return packed;
}

static wgt_status ew_run_vec(wgt_context *ctx, ew_key *key, const wgt_layout *lin, const wgt_tensor *const *in,
                             int n_in, wgt_tensor *out, uint32_t op, const ew_params *proto, int *done)
{
    *done = 0;
    int64_t n = wgt_layout_numel(&out->l);
    int pack = op_pack(out->l.dtype);
    size_t es_max = wgt_dtype_size(out->l.dtype);
    for (int i = 0; i < n_in; i++)
        if (wgt_dtype_size(in[i]->l.dtype) > es_max) es_max = wgt_dtype_size(in[i]->l.dtype);
    int64_t per = ew_vec_chunk(ctx, es_max);
    if (key->vec == 2) per &= ~(int64_t)15; /* every input's chunk on a 16-byte boundary */
    wgt_kernel *k = NULL;
    wgt_status st;
    for (int64_t e0 = 0; e0 < n; e0 += per) {
        int64_t e1 = e0 + per < n ? e0 + per : n;
        ew_params p = *proto;
        p.n = (uint32_t)(e1 - e0);
        wgt_binding b[4];
        int64_t base;
        uint32_t *offs[3] = {&p.off0, &p.off1, &p.off2};
        for (int i = 0; i < 3; i++) {
            const wgt_tensor *src = in[i < n_in ? i : 0];
            int scalar = key->scalar >> i & 1;
            int64_t lo = lin[i].offset + (scalar ? 0 : e0), hi = scalar ? lo : lin[i].offset + e1 - 1;
            if (!bind_vec4(src, lo, hi, &b[i], &base, &st)) return st; /* st OK: *done stays 0 */
            *offs[i] = (uint32_t)(lo - base);
            /* the packed kernel indexes whole vec4s from the offset (a binding alignment under 16) */
            if (key->vec == 2 && !scalar && (*offs[i] * wgt_dtype_size(src->l.dtype)) % 16) return WGT_OK;
        }
        if (!bind_vec4(out, e0, e1 - 1, &b[3], &base, &st)) return st;
        if (e1 < n) *done = 0; /* (only the end of a buffer can lack room: a later chunk redoes all) */
        p.offo = (uint32_t)((e0 - base) / (4 * pack));
        if (!k && (st = ew_kernel(ctx, key, &k))) return st;
        uint64_t vecs = ((uint64_t)(e1 - e0) + 4 * pack - 1) / (4 * pack);
        uint64_t per_group = (uint64_t)key->wg * 4; /* ITEMS in elementwise_vec.wgsl */
        uint32_t gx, gy;
        op_grid(ctx, (vecs + per_group - 1) / per_group, &gx, &gy);
        if ((st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 4, gx, gy, 1))) return st;
    }
    *done = 1;
    return WGT_OK;
}

enum { EW_SMALL = 64 };

/* Run the op over out (contiguous) from inputs broadcast to out's shape: the contiguous path when it
 * applies, else the strided one, split along dim 0 when the tensors reach more than one binding's
 * worth of storage. */
static wgt_status ew_run_body(wgt_context *ctx, ew_family fam, int ci, const wgt_tensor *const *in, int n_in,
                              wgt_tensor *out, uint32_t op, const float *fparams, const uint32_t *ibounds)
{
    wgt_layout lin[3];
    for (int i = 0; i < 3; i++) op_broadcast_layout(&in[i < n_in ? i : 0]->l, out->l.ndim, out->l.shape, &lin[i]);
    if (n_in < 3)
        for (int i = n_in; i < 3; i++) /* unused inputs read element 0 of input 0 */
            for (int d = 0; d < lin[i].ndim; d++) lin[i].strides[d] = 0;
    int64_t n = wgt_layout_numel(&out->l);
    if (n == 0) return WGT_OK;
    ew_params proto;
    memset(&proto, 0, sizeof proto);
    proto.op = op;
    if (fparams) proto.alpha = fparams[0], proto.beta = fparams[1], proto.lo = fparams[2], proto.hi = fparams[3];
    if (ibounds) proto.ilo = ibounds[0], proto.ihi = ibounds[1], proto.ilo_hi = ibounds[2], proto.ihi_hi = ibounds[3];
    ew_key key;
    memset(&key, 0, sizeof key);
    key.fam = (uint8_t)fam, key.ci = (uint8_t)ci, key.out = (uint8_t)out->l.dtype;
    for (int i = 0; i < 3; i++) key.d[i] = (uint8_t)in[i < n_in ? i : 0]->l.dtype;
    key.wg = op_workgroup_size(ctx);
    /* Outputs of at most EW_SMALL elements take the strided kernel: one workgroup either way, and
     * the contiguous kernels' variants for one-element inputs (0-D and [1] tensors, each a separate
     * pipeline per dtype signature) are never compiled for them. */
    if (!key_wide(key.ci, key.d, key.out) && n > EW_SMALL && ew_vec_ok(lin, in, n_in, out, &key.scalar, &key.mixed)) {
        key.vec = ew_pack_ok(lin, in, n_in, out, key.scalar) ? 2 : 1;
        if (key.vec == 2) key.mixed = 0;
        int done;
        wgt_status st = ew_run_vec(ctx, &key, lin, in, n_in, out, op, &proto, &done);
        if (st || done) return st;
        key.vec = 0, key.scalar = 0, key.mixed = 0; /* a buffer without room for whole vec4s: strided */
    }
    wgt_kernel *k;
    wgt_status st = ew_kernel(ctx, &key, &k);
    if (st) return st;
    int64_t rows = out->l.ndim ? out->l.shape[0] : 1;
    const wgt_layout *ls[4] = {&lin[0], &lin[1], &lin[2], &out->l};
    int64_t per = out->l.ndim ? op_rows_per_chunk(ctx, ls, 4) : 1;
    if (per == 0)
        return wgt_ctx_error(ctx, WGT_ERR_LIMIT, "elementwise: one row of this tensor is larger than a storage binding");
    int64_t row_elems = out->l.ndim ? n / rows : 1;
    int pack = op_pack(out->l.dtype);
    if (per < rows) /* chunks must end on whole output words */
        while (per > 1 && (per * row_elems) % pack) per--;
    if (per < rows && (per * row_elems) % pack)
        return wgt_ctx_error(ctx, WGT_ERR_LIMIT, "elementwise: cannot split this tensor on word boundaries");
    for (int64_t r0 = 0; r0 < rows; r0 += per) {
        int64_t r1 = r0 + per < rows ? r0 + per : rows;
        ew_params p = proto;
        p.n = (uint32_t)((r1 - r0) * row_elems);
        wgt_binding b[4];
        int64_t base;
        uint32_t *offs[3] = {&p.off0, &p.off1, &p.off2};
        for (int i = 0; i < 3; i++) {
            wgt_layout l = lin[i];
            if (l.ndim) {
                l.offset += r0 * l.strides[0];
                l.shape[0] = r1 - r0;
            }
            int64_t lo, hi;
            op_extent(&l, &lo, &hi);
            const wgt_tensor *src = in[i < n_in ? i : 0];
            if ((st = op_bind(src, lo, hi, &b[i], &base))) return st;
            *offs[i] = (uint32_t)(l.offset - base);
            if ((st = op_layout_params_fill(ctx, &l, &p.l[i]))) return st;
        }
        /* the chunk's first output element is r0 * row_elems, a whole word; the binding starts at
         * an aligned offset at or before it */
        int64_t olo = r0 * row_elems, ohi = r1 * row_elems - 1;
        if ((st = op_bind(out, olo, ohi, &b[3], &base))) return st;
        p.offo = (uint32_t)((olo - base) / pack);
        uint64_t words = ((uint64_t)p.n + pack - 1) / pack;
        uint32_t gx, gy;
        op_grid(ctx, (words + key.wg - 1) / key.wg, &gx, &gy);
        if ((st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 4, gx, gy, 1))) return st;
    }
    return WGT_OK;
}

static void note_tensor(const wgt_tensor *t, const wgt_layout *l, ew_note_tensor *nt)
{
    nt->buf = t->st->buf;
    nt->bytes = t->st->bytes;
    nt->dt = t->l.dtype;
    nt->offset = l->offset;
    for (int d = 0; d < l->ndim; d++) nt->strides[d] = l->strides[d];
}

/* ew_run_body, and during a graph capture the note that lets elementwise_fuse.c fuse its dispatch
 * with its neighbours'. */
static wgt_status ew_run(wgt_context *ctx, ew_family fam, int ci, const wgt_tensor *const *in, int n_in,
                         wgt_tensor *out, uint32_t op, const float *fparams, const uint32_t *ibounds)
{
    int mark = wgt_gpu_capture_mark(ctx);
    wgt_status st = ew_run_body(ctx, fam, ci, in, n_in, out, op, fparams, ibounds);
    if (st || mark < 0) return st;
    ew_note n;
    memset(&n, 0, sizeof n);
    n.fam = fam, n.ci = ci, n.n_in = n_in, n.op = op;
    if (fparams) memcpy(n.fp, fparams, sizeof n.fp);
    if (ibounds) memcpy(n.ib, ibounds, sizeof n.ib);
    n.ndim = out->l.ndim;
    for (int d = 0; d < n.ndim; d++) n.shape[d] = out->l.shape[d];
    for (int i = 0; i < n_in; i++) {
        wgt_layout l;
        op_broadcast_layout(&in[i]->l, out->l.ndim, out->l.shape, &l);
        note_tensor(in[i], &l, &n.in[i]);
    }
    note_tensor(out, &out->l, &n.out);
    wgt_gpu_capture_note(ctx, mark, EW_NOTE, &n, sizeof n);
    return WGT_OK;
}

/* ---- unary ---------------------------------------------------------------------------------- */

static int unary_keeps_int(wgt_unary_op op)
{
    switch (op) {
    case WGT_UNARY_NEG: case WGT_UNARY_ABS: case WGT_UNARY_SIGN: case WGT_UNARY_SQUARE: case WGT_UNARY_RELU:
    case WGT_UNARY_CLAMP: case WGT_UNARY_HARDTANH: case WGT_UNARY_FLOOR: case WGT_UNARY_CEIL: case WGT_UNARY_ROUND:
    case WGT_UNARY_TRUNC: case WGT_UNARY_FRAC: case WGT_UNARY_BITWISE_NOT: return 1;
    default: return 0;
    }
}

wgt_dtype wgt_unary_result_dtype(wgt_unary_op op, wgt_dtype x)
{
    if (op == WGT_UNARY_ISNAN || op == WGT_UNARY_ISINF || op == WGT_UNARY_ISFINITE || op == WGT_UNARY_LOGICAL_NOT)
        return WGT_BOOL;
    if (op_is_int(x) && !unary_keeps_int(op)) return WGT_F32;
    if (x == WGT_BOOL && op != WGT_UNARY_BITWISE_NOT && unary_keeps_int(op)) return WGT_BOOL;
    return x;
}

typedef struct unary_arg {
    wgt_unary_op op;
    wgt_unary_params params;
} unary_arg;

static wgt_status unary_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    unary_arg *a = arg;
    return wgt_cpu_unary(a->op, &a->params, &in[0], &out[0]);
}

wgt_status wgt_unary_ex(wgt_unary_op op, const wgt_unary_params *params, const wgt_tensor *x, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if ((unsigned)op >= WGT_UNARY_COUNT) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "unary: unknown op %d", (int)op);
    const char *name = wgt_unary_op_name(op);
    if (op == WGT_UNARY_BITWISE_NOT && op_is_float(x->l.dtype))
        return op_fail(ctx, WGT_ERR_DTYPE, "%s needs an integer or bool tensor, not %s", name, wgt_dtype_name(x->l.dtype));
    wgt_dtype odt = wgt_unary_result_dtype(op, x->l.dtype);
    wgt_tensor *y;
    wgt_status st = wgt_tensor_new(ctx, odt, x->l.ndim, x->l.shape, &y);
    if (st) return st;
    unary_arg a = {op, params ? *params : wgt_unary_params_default(op)};
    /* integer inputs of float-valued ops compute in f32; bool/ints keep i32, i64 keeps 64 bits */
    int ci = op_is_float(odt) || op_is_float(x->l.dtype) ? CI_F32 : ci_of(x->l.dtype);
    uint32_t ib[4] = {0, 0, 0, 0};
    int gpu_ok = ci != CI_I64 || int64_bounds(a.params.lo, a.params.hi, ib);
    if (op_use_gpu(ctx, name, x->l.dtype, gpu_ok)) {
        float fp[4] = {(float)a.params.alpha, (float)a.params.beta, (float)a.params.lo, (float)a.params.hi};
        if (ci != CI_I64) int_bounds(a.params.lo, a.params.hi, ci == CI_U32, ib);
        /* bitwise_not of bool is logical not (PyTorch's ~ on bool tensors) */
        uint32_t kop = op == WGT_UNARY_BITWISE_NOT && x->l.dtype == WGT_BOOL ? WGT_UNARY_LOGICAL_NOT : (uint32_t)op;
        const wgt_tensor *ins[1] = {x};
        st = ew_run(ctx, EW_UNARY, ci, ins, 1, y, kop, fp, ib);
    } else if (!(st = op_fallback_status(ctx, name, x->l.dtype, gpu_ok))) {
        const wgt_tensor *ins[1] = {x};
        st = op_reference(ctx, unary_ref, &a, ins, 1, &y, 1);
    }
    op_grad_unary rec = {op, a.params};
    return op_record(op_finish(st, y, out), OP_GRAD_UNARY, &x, 1, &rec, sizeof rec, out);
}

wgt_status wgt_unary(wgt_unary_op op, const wgt_tensor *x, wgt_tensor **out) { return wgt_unary_ex(op, NULL, x, out); }

/* ---- binary --------------------------------------------------------------------------------- */

static int binary_is_compare(wgt_binary_op op) { return op >= WGT_BINARY_EQ && op <= WGT_BINARY_LOGICAL_XOR; }
static int binary_is_bitwise(wgt_binary_op op) { return op >= WGT_BINARY_BITWISE_AND && op <= WGT_BINARY_SHIFT_RIGHT; }

wgt_dtype wgt_binary_result_dtype(wgt_binary_op op, wgt_dtype a, wgt_dtype b)
{
    if (binary_is_compare(op)) return WGT_BOOL;
    wgt_dtype t = op_promote(a, b);
    if ((op == WGT_BINARY_DIV || op == WGT_BINARY_ATAN2) && op_is_int(t)) return WGT_F32;
    if (t == WGT_BOOL && !binary_is_bitwise(op) && op != WGT_BINARY_MAXIMUM && op != WGT_BINARY_MINIMUM &&
        op != WGT_BINARY_MUL)
        return op == WGT_BINARY_ADD ? WGT_BOOL : WGT_I32; /* PyTorch: bool + bool is bool (or) */
    return t;
}

static wgt_status binary_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    return wgt_cpu_binary(*(wgt_binary_op *)arg, &in[0], &in[1], &out[0]);
}

wgt_status wgt_binary(wgt_binary_op op, const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out)
{
    OP_BEGIN(a, out);
    const wgt_tensor *ins[2] = {a, b};
    wgt_status st = op_same_context("binary", ins, 2);
    if (st) return st;
    if ((unsigned)op >= WGT_BINARY_COUNT) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "binary: unknown op %d", (int)op);
    const char *name = wgt_binary_op_name(op);
    if (binary_is_bitwise(op) && (op_is_float(a->l.dtype) || op_is_float(b->l.dtype)))
        return op_fail(ctx, WGT_ERR_DTYPE, "%s needs integer or bool tensors, not %s and %s", name,
                       wgt_dtype_name(a->l.dtype), wgt_dtype_name(b->l.dtype));
    int ndim;
    int64_t shape[WGT_MAX_DIMS];
    if ((st = op_broadcast_shape(ctx, name, &a->l, &b->l, &ndim, shape))) return st;
    wgt_dtype odt = wgt_binary_result_dtype(op, a->l.dtype, b->l.dtype);
    wgt_dtype cdt = binary_is_compare(op) ? op_promote(a->l.dtype, b->l.dtype) : odt;
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, odt, ndim, shape, &y))) return st;
    /* An i64 compared with a float: the reference compares in double, where i64 rounds to 53 bits;
     * the kernel's f32 rounds it to 24, so those comparisons run the reference. */
    int wide_vs_float = op_is_float(cdt) && (a->l.dtype == WGT_I64 || b->l.dtype == WGT_I64);
    int gpu_ok = !(wide_vs_float && op >= WGT_BINARY_EQ && op <= WGT_BINARY_GE);
    if (op_use_gpu(ctx, name, cdt, gpu_ok)) {
        st = ew_run(ctx, EW_BINARY, ci_of(cdt), ins, 2, y, (uint32_t)op, NULL, NULL);
    } else if (!(st = op_fallback_status(ctx, name, cdt, gpu_ok)))
        st = op_reference(ctx, binary_ref, &op, ins, 2, &y, 1);
    return op_record(op_finish(st, y, out), OP_GRAD_BINARY, ins, 2, &op, sizeof op, out);
}

/* ---- where ---------------------------------------------------------------------------------- */

static wgt_status where_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    return wgt_cpu_where(&in[0], &in[1], &in[2], &out[0]);
}

wgt_status wgt_where(const wgt_tensor *cond, const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out)
{
    OP_BEGIN(cond, out);
    const wgt_tensor *ins[3] = {cond, a, b};
    wgt_status st = op_same_context("where", ins, 3);
    if (st) return st;
    int n1, n2;
    int64_t s1[WGT_MAX_DIMS], s2[WGT_MAX_DIMS];
    wgt_layout tmp;
    if ((st = op_broadcast_shape(ctx, "where", &a->l, &b->l, &n1, s1))) return st;
    tmp = a->l;
    tmp.ndim = n1;
    memcpy(tmp.shape, s1, sizeof s1);
    if ((st = op_broadcast_shape(ctx, "where", &cond->l, &tmp, &n2, s2))) return st;
    wgt_dtype odt = op_promote(a->l.dtype, b->l.dtype);
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, odt, n2, s2, &y))) return st;
    if (op_use_gpu(ctx, "where", odt, 1)) {
        /* the condition loads as the values' compute type (a float condition of integer values as
         * 0 or 1): nonzero (or NaN) is true */
        st = ew_run(ctx, EW_WHERE, ci_of(odt), ins, 3, y, 0, NULL, NULL);
    } else if (!(st = op_fallback_status(ctx, "where", odt, 1)))
        st = op_reference(ctx, where_ref, NULL, ins, 3, &y, 1);
    return op_record(op_finish(st, y, out), OP_GRAD_WHERE, ins, 3, NULL, 0, out);
}

/* ---- cast, copy, contiguous ----------------------------------------------------------------- */

static wgt_status cast_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    return wgt_cpu_cast(&in[0], &out[0]);
}

/* Copy x into the new contiguous tensor y (same shape), converting dtype. */
static wgt_status cast_into(wgt_context *ctx, const wgt_tensor *x, wgt_tensor *y)
{
    wgt_dtype in = x->l.dtype, odt = y->l.dtype;
    wgt_status st;
    if (!wgt_gpu_runs_reference(ctx) && in == odt && wgt_layout_is_contiguous(&x->l) && (x->l.offset * wgt_dtype_size(in)) % 4 == 0) {
        /* a plain buffer copy */
        uint64_t bytes = ((uint64_t)wgt_layout_numel(&x->l) * wgt_dtype_size(in) + 3) & ~3ull;
        uint64_t src = (uint64_t)x->l.offset * wgt_dtype_size(in);
        if (src + bytes > x->st->bytes) bytes = x->st->bytes - src;
        return wgt_gpu_copy(ctx, x->st->buf, src, y->st->buf, 0, bytes);
    }
    if (op_use_gpu(ctx, "cast", in, 1)) {
        /* into i64 integers load as 64 bits (converted as C does); floats convert in compute() */
        int ci = odt == WGT_I64 && !op_is_float(in) ? CI_I64 : ci_of(in);
        const wgt_tensor *ins[1] = {x};
        return ew_run(ctx, EW_CAST, ci, ins, 1, y, 0, NULL, NULL);
    }
    if ((st = op_fallback_status(ctx, "cast", in, 1))) return st;
    const wgt_tensor *ins[1] = {x};
    return op_reference(ctx, cast_ref, NULL, ins, 1, &y, 1);
}

wgt_status wgt_tensor_cast(const wgt_tensor *x, wgt_dtype dtype, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if ((unsigned)dtype >= WGT_DTYPE_COUNT) return op_fail(ctx, WGT_ERR_DTYPE, "cast: unknown dtype %d", (int)dtype);
    wgt_tensor *y;
    wgt_status st = wgt_tensor_new(ctx, dtype, x->l.ndim, x->l.shape, &y);
    if (st) return st;
    return op_record(op_finish(cast_into(ctx, x, y), y, out), OP_GRAD_CAST, &x, 1, NULL, 0, out);
}

wgt_status wgt_tensor_copy(const wgt_tensor *x, wgt_tensor **out)
{
    if (!x) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "copy: NULL tensor");
    return wgt_tensor_cast(x, x->l.dtype, out);
}

wgt_status wgt_tensor_contiguous(const wgt_tensor *x, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if (wgt_layout_is_contiguous(&x->l)) {
        *out = wgt_tensor_ref(x);
        return *out ? WGT_OK : op_fail(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    return wgt_tensor_copy(x, out);
}

wgt_status wgt_full(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, double value, wgt_tensor **out)
{
    if (!ctx || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "full: NULL argument");
    *out = NULL;
    /* a one-element host tensor of the value in dtype, broadcast by a cast */
    wgt_tensor *one;
    double v = value;
    wgt_status st = wgt_tensor_from_host(ctx, WGT_F32, 0, NULL, &(float){(float)v}, &one);
    if (st) return st;
    if (dtype == WGT_I64) { /* the value in 64 bits, as the reference stores it (saturated, NaN 0) */
        wgt_tensor_free(one);
        int64_t lv = isnan(value) ? 0 : value >= 9223372036854775808.0 ? INT64_MAX
                   : value <= -9223372036854775808.0 ? INT64_MIN : (int64_t)value;
        if ((st = wgt_tensor_from_host(ctx, WGT_I64, 0, NULL, &lv, &one))) return st;
    } else if (op_is_int(dtype) && fabs(value) >= 16777216.0) { /* past f32's exact integers: go through i32 */
        wgt_tensor_free(one);
        int32_t iv = (int32_t)value;
        if ((st = wgt_tensor_from_host(ctx, WGT_I32, 0, NULL, &iv, &one))) return st;
    }
    wgt_tensor *e, *y;
    if ((st = wgt_tensor_expand(one, ndim, shape, &e))) {
        wgt_tensor_free(one);
        return st;
    }
    if (!(st = wgt_tensor_new(ctx, dtype, ndim, shape, &y))) st = op_finish(cast_into(ctx, e, y), y, out);
    wgt_tensor_free(e);
    wgt_tensor_free(one);
    return st;
}
