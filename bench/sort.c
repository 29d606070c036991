/* Sorting throughput: bench_sort [--size small|large] [--reps N]
 * Prints Melem/s (elements of x per second) for:
 *  - sort of one long f32 row ([1M]: tiles in workgroup memory, then merge passes),
 *  - sort of many short rows ([4096, 1024] along the last dim: one dispatch, two rows a workgroup),
 *  - topk k=50 of a vocabulary-sized row ([150000]: three tile passes; sampling's case), and of
 *    [32, 150000] (a batch of them),
 *  - argsort of bf16 rows ([4096, 1024]), unique of [1M] small integers (reads a count back),
 *    searchsorted of 1M values into 4096 boundaries, histc of [1M] in 100 bins.
 * Each figure: bench_util.h's bench_seconds (a quarter second of warm-up calls, then N calls
 * recorded back to back between two wgt_context_sync, wall clock). --size small is a sixteenth of
 * most sizes, 3 reps, for the CPU adapters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "ops/api.h"
#include "ops/ops.h"

#include "bench_util.h"

static wgt_context *ctx;
static int reps = 0; /* 0: 20 for large sizes, 3 for small */

enum { B_SORT, B_ARGSORT, B_TOPK, B_UNIQUE, B_SEARCH, B_HISTC };

static wgt_status run(int kind, const wgt_tensor *x, const wgt_tensor *aux, int64_t k)
{
    wgt_tensor *a = NULL, *b = NULL;
    wgt_status st;
    switch (kind) {
    case B_SORT: st = wgt_sort(x, -1, 0, &a, &b); break;
    case B_ARGSORT: st = wgt_argsort(x, -1, 0, &a); break;
    case B_TOPK: st = wgt_topk(x, k, -1, 1, 1, &a, &b); break;
    case B_UNIQUE: st = wgt_unique(x, &a, NULL, NULL, NULL); break;
    case B_SEARCH: st = wgt_searchsorted(aux, x, 0, NULL, &a); break;
    default: st = wgt_histc(x, 100, -1, 1, &a); break;
    }
    wgt_tensor_free(a);
    wgt_tensor_free(b);
    return st;
}

typedef struct call {
    int kind;
    const wgt_tensor *x, *aux;
    int64_t k;
} call;

static wgt_status call_once(void *arg)
{
    const call *c = arg;
    return run(c->kind, c->x, c->aux, c->k);
}

static void bench(const char *what, int kind, const wgt_tensor *x, const wgt_tensor *aux, int64_t k)
{
    call c = {kind, x, aux, k};
    double t = bench_seconds(ctx, call_once, &c, reps);
    double n = (double)wgt_tensor_numel(x);
    printf("%-44s %10.1f Melem/s  %9.1f us\n", what, n / t / 1e6, t * 1e6);
    fflush(stdout);
}

static void bench_shape(const char *name, int kind, wgt_dtype dt, int nd, const int64_t *shape, int64_t k)
{
    char what[128];
    if (nd == 1) snprintf(what, sizeof what, "%s %s [%lld]", name, wgt_dtype_name(dt), (long long)shape[0]);
    else snprintf(what, sizeof what, "%s %s [%lld, %lld]", name, wgt_dtype_name(dt), (long long)shape[0], (long long)shape[1]);
    if (kind == B_TOPK) snprintf(what + strlen(what), sizeof what - strlen(what), " k=%lld", (long long)k);
    /* unique: i32 values in [-1000, 1000) (the cast to an integer dtype truncates) */
    wgt_tensor *x = bench_random(ctx, dt, nd, shape, kind == B_UNIQUE ? -1000 : -1, kind == B_UNIQUE ? 1000 : 1);
    wgt_tensor *aux = NULL;
    if (kind == B_SEARCH) {
        TRY(wgt_linspace(ctx, -1, 1, k, dt, &aux));
        snprintf(what + strlen(what), sizeof what - strlen(what), " into %lld", (long long)k);
    }
    bench(what, kind, x, aux, k);
    wgt_tensor_free(aux);
    wgt_tensor_free(x);
}

int main(int argc, char **argv)
{
    int large;
    ctx = bench_begin(argc, argv, &large, &reps, 20, 3);
    int64_t div = large ? 1 : 16; /* small: sixteen times fewer elements */
    bench_shape("sort", B_SORT, WGT_F32, 1, (int64_t[]){(1 << 20) / div}, 0);
    bench_shape("sort", B_SORT, WGT_F32, 2, (int64_t[]){4096 / div, 1024}, 0);
    bench_shape("topk", B_TOPK, WGT_F32, 1, (int64_t[]){150000}, 50);
    bench_shape("topk", B_TOPK, WGT_F16, 2, (int64_t[]){32 / (large ? 1 : 8), 150000}, 50);
    bench_shape("argsort", B_ARGSORT, WGT_BF16, 2, (int64_t[]){4096 / div, 1024}, 0);
    bench_shape("unique", B_UNIQUE, WGT_I32, 1, (int64_t[]){(1 << 20) / div}, 0);
    bench_shape("searchsorted", B_SEARCH, WGT_F32, 1, (int64_t[]){(1 << 20) / div}, 4096);
    bench_shape("histc", B_HISTC, WGT_F32, 1, (int64_t[]){(1 << 20) / div}, 0);
    wgt_context_free(ctx);
    return 0;
}
