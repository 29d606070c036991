/* Helpers shared by the files of the CPU reference (not part of its interface). */
#ifndef WGT_CPU_INTERNAL_H
#define WGT_CPU_INTERNAL_H

#include "core/error.h"
#include "cpu/cpu.h"

#define CPU_CHECK(t, what)                                 \
    do {                                                   \
        wgt_status st_ = wgt_cpu_check((t), (what));       \
        if (st_ != WGT_OK) return st_;                     \
    } while (0)

#define CPU_TRY(expr)                                      \
    do {                                                   \
        wgt_status st_ = (expr);                           \
        if (st_ != WGT_OK) return st_;                     \
    } while (0)

static inline int64_t cpu_numel(const wgt_cpu_tensor *t) { return wgt_layout_numel(&t->l); }
static inline int64_t cpu_at(const wgt_cpu_tensor *t, int64_t i) { return wgt_layout_index(&t->l, i); }
/* cpu_at without the divisions when the caller knows t is contiguous (dense, row-major). */
static inline int64_t cpu_at_c(const wgt_cpu_tensor *t, int64_t i, int contiguous)
{
    return contiguous ? t->l.offset + i : wgt_layout_index(&t->l, i);
}

/* A view of t with layout l (same storage). */
static inline wgt_cpu_tensor cpu_view(const wgt_cpu_tensor *t, const wgt_layout *l)
{
    wgt_cpu_tensor v = {t->data, *l};
    return v;
}

/* t broadcast to out's shape, as a view. */
wgt_status cpu_broadcast_view(const wgt_cpu_tensor *t, const wgt_cpu_tensor *out, const char *what,
                              wgt_cpu_tensor *view);
/* Storage index of multi-index idx (ndim entries) in l. */
static inline int64_t cpu_offset(const wgt_layout *l, const int64_t *idx)
{
    int64_t at = l->offset;
    for (int d = 0; d < l->ndim; d++) at += idx[d] * l->strides[d];
    return at;
}
/* Advance a row-major multi-index over shape; 0 when it wraps around. */
static inline int cpu_next(int64_t *idx, const int64_t *shape, int ndim)
{
    for (int d = ndim - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return 1;
        idx[d] = 0;
    }
    return 0;
}
/* Copy one element from (src, at) to (dst, to), exact for integers, rounded for floats. */
static inline void cpu_copy_elem(const wgt_cpu_tensor *src, int64_t at, const wgt_cpu_tensor *dst,
                                 int64_t to)
{
    if (wgt_cpu_is_float(src->l.dtype)) wgt_cpu_store_f(dst, to, wgt_cpu_load_f(src, at));
    else wgt_cpu_store_i(dst, to, wgt_cpu_load_i(src, at));
}
/* Check that t is an integer tensor (for indices). */
wgt_status cpu_check_index_dtype(const wgt_cpu_tensor *t, const char *what);
/* Normalise index v against size n ([-n, n) accepted) or report it. */
wgt_status cpu_wrap_index(int64_t v, int64_t n, const char *what, int64_t *res);
/* Same shapes (ndim and sizes). */
int cpu_same_shape(const wgt_layout *a, const wgt_layout *b);
/* "[2, 3, 4]" into buf. */
const char *cpu_shape_str(const wgt_layout *l, char *buf, size_t size);

#endif
