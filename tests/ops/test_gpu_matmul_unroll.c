/* matmul_regs.wgsl's entry `unrolled` (WGT_MATMUL_TILE_UNROLL=1: the register tiles' sums as named
 * vec4s, the products spelled out by src/ops/matmul.c's regs_acc_gen) against the CPU reference
 * (src/cpu/matmul.c): each tile it runs, forced (WGT_MATMUL_TILE), over every load mode (A along k
 * or m in 16-byte words, B along n or k, one element a load for odd sizes), f16 / bf16 operands,
 * a batch, partial tiles and the k split; then its own choice (regs_big: 128 x 96 where A is read
 * along k, 128 x 128 where along m or by elements, from 132 tiles on) on products that large, and
 * those products again with the variable 0 (the opt-out: `main`'s array of sums).
 * Tolerances as test_gpu_matmul's: f32 sums in another order than the reference's doubles, about
 * K * 2^-24 relative to sum |a||b|: atol 1e-4 + rtol 1e-4 for unit-range inputs (K <= 2048);
 * f16 / bf16 results one ulp (rtol 2e-3 / 1.6e-2). */
#include <math.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "support/check.h"
#include "support/pairs.h"

typedef test_pair pair;

static wgt_context *ctx;

static pair make(wgt_dtype dt, int nd, const int64_t *shape) { return test_pair_make(ctx, dt, nd, shape); }

static double rtol_of(wgt_dtype dt) { return dt == WGT_F32 ? 1e-4 : dt == WGT_F16 ? 2e-3 : 1.6e-2; }
static double atol_of(wgt_dtype dt) { return dt == WGT_F32 ? 1e-4 : dt == WGT_F16 ? 2e-3 : 2e-2; }

static void compare(const char *what, const wgt_tensor *y, const wgt_cpu_tensor *ref, int64_t K)
{
    int64_t n = wgt_tensor_numel(y);
    size_t sz = wgt_dtype_size(wgt_tensor_dtype(y));
    CHECK(wgt_tensor_dtype(y) == ref->l.dtype && wgt_layout_numel(&ref->l) == n, "%s: dtype or size differs", what);
    void *got = malloc(n * sz + 8);
    if (wgt_tensor_to_host(y, got, n * sz)) {
        CHECK(0, "%s: to_host: %s", what, wgt_errmsg());
        free(got);
        return;
    }
    wgt_cpu_tensor g = wgt_cpu_tensor_make(got, wgt_tensor_dtype(y), wgt_tensor_ndim(y), wgt_tensor_shape(y));
    double atol = atol_of(ref->l.dtype), rtol = rtol_of(ref->l.dtype);
    for (int64_t i = 0, bad = 0; i < n && bad < 3; i++) {
        double a = wgt_cpu_load_f(&g, i), b = wgt_cpu_load_f(ref, wgt_layout_index(&ref->l, i));
        if (!((isnan(a) && isnan(b)) || a == b || fabs(a - b) <= atol + rtol * fabs(b))) {
            bad++;
            CHECK(0, "%s: element %lld: gpu %.9g, reference %.9g", what, (long long)i, a, b);
        }
    }
    test_checks++;
    free(got);
}

static void check_matmul(const char *what, const pair *a, const pair *b) { test_check_matmul(what, a, b, compare); }

static void check_linear(const char *what, const pair *x, const pair *w)
{
    wgt_tensor *y = NULL;
    wgt_status st = wgt_linear(x->d, w->d, NULL, &y);
    CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
    if (st) return;
    void *buf;
    wgt_cpu_tensor r = test_ref_like(y, &buf);
    MUST(wgt_cpu_linear(&x->h, &w->h, NULL, &r));
    compare(what, y, &r, x->h.l.shape[x->h.l.ndim - 1]);
    free(buf);
    wgt_tensor_free(y);
}

/* Every load mode through tile t (WGT_MATMUL_TILE), partial tiles (sizes not multiples of it). */
static void tile_cases(const char *t)
{
    char what[160];
    setenv("WGT_MATMUL_TILE", t, 1);
    pair a = make(WGT_F32, 2, (int64_t[]){136, 40}), b = make(WGT_F32, 2, (int64_t[]){40, 200});
    pair at0 = make(WGT_F32, 2, (int64_t[]){40, 136}), at = test_pair_transposed(&at0, 0, 1);
    pair w = make(WGT_F32, 2, (int64_t[]){200, 40}), wh = make(WGT_F16, 2, (int64_t[]){200, 40});
    pair bb = make(WGT_BF16, 2, (int64_t[]){40, 200});
    pair ba = make(WGT_F32, 3, (int64_t[]){3, 24, 16}), bbt = make(WGT_F32, 3, (int64_t[]){3, 16, 32});
    pair ka = make(WGT_F32, 2, (int64_t[]){64, 2048}), kb = make(WGT_F32, 2, (int64_t[]){2048, 24});
    pair kt0 = make(WGT_F32, 2, (int64_t[]){2048, 64}), kt = test_pair_transposed(&kt0, 0, 1);
    pair oa = make(WGT_F32, 2, (int64_t[]){131, 53}), ob = make(WGT_F32, 2, (int64_t[]){53, 97});
    pair oh = make(WGT_F16, 2, (int64_t[]){53, 97});
    const struct { const char *name; const pair *x, *y; int linear; } cs[] = {
        {"[136,40]x[40,200]", &a, &b, 0},          {"[40,136]^T x [40,200]", &at, &b, 0},
        {"linear f32 [136,40] [200,40]", &a, &w, 1}, {"linear f16 weights", &a, &wh, 1},
        {"bf16 B", &a, &bb, 0},                    {"batched [3,24,16]x[3,16,32]", &ba, &bbt, 0},
        {"k split [64,2048]x[2048,24]", &ka, &kb, 0}, {"k split [2048,64]^T x [2048,24]", &kt, &kb, 0},
        {"odd [131,53]x[53,97]", &oa, &ob, 0},      {"odd, f16 B", &oa, &oh, 0},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        snprintf(what, sizeof what, "unrolled, tile %s: %s", t, cs[i].name);
        if (cs[i].linear) check_linear(what, cs[i].x, cs[i].y);
        else check_matmul(what, cs[i].x, cs[i].y);
    }
    unsetenv("WGT_MATMUL_TILE");
    wgt_tensor_free(at.d), wgt_tensor_free(kt.d);
    test_pair_drop(&a), test_pair_drop(&b), test_pair_drop(&at0), test_pair_drop(&w), test_pair_drop(&wh);
    test_pair_drop(&bb), test_pair_drop(&ba), test_pair_drop(&bbt), test_pair_drop(&ka), test_pair_drop(&kb);
    test_pair_drop(&kt0), test_pair_drop(&oa), test_pair_drop(&ob), test_pair_drop(&oh);
}

/* regs_big's own choice: 132 tiles of 128 x 96 (A along k: plain and linear) and of 128 x 128 (A
 * along m; A by elements, an odd k), a short k to keep the reference quick. */
static void big_cases(void)
{
    pair a = make(WGT_F32, 2, (int64_t[]){1536, 8}), b = make(WGT_F32, 2, (int64_t[]){8, 1056});
    pair w = make(WGT_F32, 2, (int64_t[]){1056, 8});
    pair at0 = make(WGT_F32, 2, (int64_t[]){8, 1536}), at = test_pair_transposed(&at0, 0, 1);
    pair bw = make(WGT_F32, 2, (int64_t[]){8, 1408});
    pair oa = make(WGT_F32, 2, (int64_t[]){1536, 7}), ob = make(WGT_F32, 2, (int64_t[]){7, 1408});
    check_matmul("auto: [1536,8]x[8,1056] (128 x 96)", &a, &b);
    check_linear("auto: linear [1536,8] [1056,8] (128 x 96)", &a, &w);
    check_matmul("auto: [8,1536]^T x [8,1408] (128 x 128)", &at, &bw);
    check_matmul("auto: [1536,7]x[7,1408] (128 x 128, elements)", &oa, &ob);
    wgt_tensor_free(at.d);
    test_pair_drop(&a), test_pair_drop(&b), test_pair_drop(&w), test_pair_drop(&at0), test_pair_drop(&bw);
    test_pair_drop(&oa), test_pair_drop(&ob);
}

int main(void)
{
    test_rng = 0x13198A2E03707344ull;
    MUST(wgt_context_create(NULL, &ctx));
    setenv("WGT_MATMUL_TILE_UNROLL", "1", 1);
    /* regs_big's two tiles (384 invocations: where the device allows), a smaller one of each shape */
    const char *tiles[] = {"128x96x8:8x4", "128x128x8:8x8", "64x64x8:8x4", "32x32x8:4x4"};
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) tile_cases(tiles[i]);
    big_cases();
    /* the opt-out (0): regs_big's products through `main`'s tiles, the array of sums */
    setenv("WGT_MATMUL_TILE_UNROLL", "0", 1);
    big_cases();
    unsetenv("WGT_MATMUL_TILE_UNROLL");
    wgt_context_free(ctx);
    return test_finish("test_gpu_matmul_unroll");
}
