/* Shape and creation ops on the GPU against the CPU reference: tril/triu, arange, linspace, eye,
 * cat, stack, split/chunk, flip, roll, repeat, pad, over every dtype (these move raw bits, so the
 * comparison is exact), on contiguous, transposed, narrowed (offset) and expanded (stride 0)
 * inputs, odd sizes, empty and one-element tensors. */
#include "gpu_pair.h"

/* The inputs every movement op runs on: [5, 7, 9] contiguous, transposed, narrowed, expanded. */
static int make_inputs(wgt_dtype dt, pair *xs, const char **names)
{
    int64_t shape[3] = {5, 7, 9}, one[3] = {1, 1, 1}, e_shape[3] = {3, 0, 4}, b_shape[3] = {1, 7, 1};
    pair base = pair_rand(dt, 3, shape, lo_of(dt), hi_of(dt), 1);
    xs[0] = base, names[0] = "contiguous";
    xs[1] = pair_transpose(base, 0, 2), names[1] = "transposed";
    xs[2] = pair_narrow(base, 1, 2, 4), names[2] = "narrowed";
    pair small = pair_rand(dt, 3, b_shape, lo_of(dt), hi_of(dt), 0);
    int64_t ex[3] = {3, 7, 5};
    xs[3] = pair_expand(small, 3, ex), names[3] = "expanded";
    pair_free(small);
    xs[4] = pair_rand(dt, 3, one, lo_of(dt), hi_of(dt), 0), names[4] = "one element";
    xs[5] = pair_rand(dt, 3, e_shape, 0, 1, 0), names[5] = "empty";
    return 6;
}

/* linspace into integers truncates the reference's double values: the GPU repeats that double
 * arithmetic, so results must be equal, also where a value lands a hair below an integer
 * (linspace(-20, 8, 101)[75] is 0.9999999999999991 -> 0; linspace(-20, -18, 7)[3] is -19 exactly,
 * -18.999999999999996 -> -18 were the sum rounded toward zero), past the dtype's range, at
 * magnitudes past 2^53 and 2^63, for tiny, infinite and NaN ends; then random ends and lengths.
 * WGT_STRICT: a silent fallback to the reference would compare the reference with itself. */
static void test_linspace_int(wgt_dtype dt)
{
    static const double cases[][3] = {
        {-20, 8, 101}, {-20, 4, 95}, {-20, 10, 23}, {-20, -18, 7}, {-20, -18, 29}, {0, 10, 101}, {10, 0, 101}, {-3, 11, 1001}, {0, 1, 11}, {-1, 2, 37}, {10, -10, 7}, {2, 5, 1},
        {0.1, 0.7, 61}, {-300, 300, 13}, {-1e10, 1e10, 21}, {-1e19, 1e19, 9}, {1e15, 1e15 + 999, 1000},
        {-9.3e18, 9.3e18, 5}, {1e300, -1e300, 5}, {-1e308, 1e308, 3}, {1e-310, 3e-310, 4}, {5, 5, 0},
        {INFINITY, 1, 4}, {-INFINITY, INFINITY, 3}, {NAN, 2, 3}, {0, 4294967296.5, 65}, {-0.9, 0.9, 19},
    };
    char what[160];
    setenv("WGT_STRICT", "1", 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(what, sizeof what, "linspace(%g, %g, %g)", cases[i][0], cases[i][1], cases[i][2]);
        DIFF(what, 0, 0, wgt_linspace(side[S], cases[i][0], cases[i][1], (int64_t)cases[i][2], dt, &y_[S]));
    }
    for (int i = 0; i < 60; i++) {
        double scale = pow(10, floor(test_uniform(0, 12))), a = floor(test_uniform(-1, 1) * scale) / 8, b = test_uniform(-1, 1) * scale;
        int64_t n = (int64_t)test_uniform(2, i < 50 ? 50 : 3000);
        snprintf(what, sizeof what, "linspace(%.17g, %.17g, %lld)", a, b, (long long)n);
        DIFF(what, 0, 0, wgt_linspace(side[S], a, b, n, dt, &y_[S]));
    }
    unsetenv("WGT_STRICT");
}

int main(void)
{
    pair_open();
    for (int di = 0; di < N_DTYPES; di++) {
        wgt_dtype dt = all_dtypes[di];
        pair xs[6];
        const char *names[6];
        int n = make_inputs(dt, xs, names);
        char what[160];
        for (int i = 0; i < n; i++) {
            wgt_tensor *const *x = xs[i].t;
            for (int k = -1; k <= 2; k += 3) {
                snprintf(what, sizeof what, "tril k=%d %s", k, names[i]);
                DIFF(what, 0, 0, wgt_tril(x[S], k, &y_[S]));
                snprintf(what, sizeof what, "triu k=%d %s", k, names[i]);
                DIFF(what, 0, 0, wgt_triu(x[S], k, &y_[S]));
            }
            int fd[2] = {0, 2};
            snprintf(what, sizeof what, "flip %s", names[i]);
            DIFF(what, 0, 0, wgt_flip(x[S], fd, 2, &y_[S]));
            int64_t sh[2] = {3, -12};
            int rd[2] = {1, 2};
            snprintf(what, sizeof what, "roll %s", names[i]);
            DIFF(what, 0, 0, wgt_roll(x[S], sh, rd, 2, &y_[S]));
            snprintf(what, sizeof what, "roll flat %s", names[i]);
            DIFF(what, 0, 0, wgt_roll(x[S], &(int64_t){5}, NULL, 1, &y_[S]));
            int64_t rep[4] = {2, 1, 3, 2};
            snprintf(what, sizeof what, "repeat %s", names[i]);
            DIFF(what, 0, 0, wgt_repeat(x[S], rep, 4, &y_[S]));
            int empty = wgt_tensor_numel(x[0]) == 0;
            for (int mode = 0; mode < WGT_PAD_COUNT; mode++) {
                if (empty && mode != WGT_PAD_CONSTANT) continue;
                int64_t pads[6] = {1, 0, 0, 0, 2, -1}; /* after of the last dim crops */
                if (mode == WGT_PAD_REFLECT && wgt_tensor_dim(x[0], 0) < 2) pads[0] = 0;
                if (mode == WGT_PAD_REFLECT && wgt_tensor_dim(x[0], 1) < 3) pads[4] = 0;
                if (mode == WGT_PAD_CIRCULAR && wgt_tensor_dim(x[0], 1) < 2) pads[4] = wgt_tensor_dim(x[0], 1);
                snprintf(what, sizeof what, "pad mode %d %s", mode, names[i]);
                DIFF(what, 0, 0, wgt_pad(x[S], (wgt_pad_mode)mode, pads, 7, &y_[S]));
            }
            /* cat with itself and a narrowed piece along each dim; 8-bit and 16-bit pieces share words */
            for (int d = 0; d < 3; d++) {
                if (wgt_tensor_dim(x[0], d) == 0) continue;
                pair part = pair_narrow(xs[i], d, 0, 1);
                const wgt_tensor *g[3] = {x[0], part.t[0], x[0]}, *c[3] = {x[1], part.t[1], x[1]};
                snprintf(what, sizeof what, "cat dim %d %s", d, names[i]);
                DIFF(what, 0, 0, wgt_cat(S ? c : g, 3, d, &y_[S]));
                snprintf(what, sizeof what, "stack dim %d %s", d, names[i]);
                const wgt_tensor *g3[3] = {x[0], x[0], x[0]}, *c3[3] = {x[1], x[1], x[1]};
                DIFF(what, 0, 0, wgt_stack(S ? c3 : g3, 3, d, &y_[S]));
                pair_free(part);
            }
        }
        /* even sizes: the word-aligned slab path of cat for 8- and 16-bit elements too */
        int64_t eshape[3] = {3, 4, 8};
        pair ev = pair_rand(dt, 3, eshape, lo_of(dt), hi_of(dt), 1), evn = pair_narrow(ev, 2, 4, 4);
        for (int d = 1; d < 3; d++) {
            const wgt_tensor *g[3] = {ev.t[0], ev.t[0], ev.t[0]}, *c[3] = {ev.t[1], ev.t[1], ev.t[1]};
            snprintf(what, sizeof what, "cat even dim %d", d);
            DIFF(what, 0, 0, wgt_cat(S ? c : g, 3, d, &y_[S]));
        }
        const wgt_tensor *gn[2] = {evn.t[0], ev.t[0]}, *cn[2] = {evn.t[1], ev.t[1]};
        DIFF("cat even narrowed dim 2", 0, 0, wgt_cat(S ? cn : gn, 2, 2, &y_[S]));
        pair_free(evn), pair_free(ev);
        /* split and chunk are views: their copies equal the reference's narrowed copies */
        for (int s = 0; s < 2; s++) {
            wgt_tensor *parts[4];
            int np = 0;
            MUST(wgt_chunk(xs[0].t[s], 3, 1, parts, &np));
            CHECK(np == 3 && wgt_tensor_dim(parts[2], 1) == 1, "chunk: %d pieces", np);
            for (int j = 0; j < np; j++) wgt_tensor_free(parts[j]);
            int64_t sizes[3] = {2, 0, 3};
            MUST(wgt_split(xs[0].t[s], sizes, 3, 0, parts));
            CHECK(wgt_tensor_dim(parts[2], 0) == 3 && wgt_tensor_numel(parts[1]) == 0, "split sizes");
            for (int j = 0; j < 3; j++) wgt_tensor_free(parts[j]);
        }
        wgt_tensor *parts[2][2];
        int np;
        for (int s = 0; s < 2; s++) MUST(wgt_chunk(xs[0].t[s], 2, 2, parts[s], &np));
        snprintf(what, sizeof what, "chunk piece copy");
        int64_t ones[3] = {1, 1, 1};
        DIFF(what, 0, 0, wgt_repeat(parts[S][1], ones, 3, &y_[S]));
        for (int s = 0; s < 2; s++) wgt_tensor_free(parts[s][0]), wgt_tensor_free(parts[s][1]);
        for (int i = 0; i < n; i++) pair_free(xs[i]);

        /* creation: integer values exact; floats computed in f32 on the GPU (a few ulps of the
         * largest term against the reference's double) */
        double rt = dt == WGT_F32 ? 1e-6 : dt == WGT_F16 ? 1e-3 : 8e-3;
        snprintf(what, sizeof what, "arange");
        DIFF(what, 1e-6, rt, wgt_arange(side[S], -7, 300, dt == WGT_U8 || dt == WGT_BOOL ? 1 : 3, dt, &y_[S]));
        if (op_is_float(dt)) {
            DIFF("arange fractional", 1e-6, rt, wgt_arange(side[S], -1.5, 2.25, 0.125, dt, &y_[S]));
            DIFF("linspace", 1e-5, rt, wgt_linspace(side[S], -3, 11, 1001, dt, &y_[S]));
            /* one step is start, as PyTorch (the reference gives end: reported) */
            wgt_tensor *one;
            MUST(wgt_linspace(side[0], 2, 5, 1, dt, &one));
            float got = 0;
            wgt_tensor *f;
            MUST(wgt_tensor_cast(one, WGT_F32, &f));
            MUST(wgt_tensor_to_host(f, &got, 4));
            CHECK(got == 2, "linspace(2, 5, 1) %s = %g, not 2", wgt_dtype_name(dt), got);
            wgt_tensor_free(f), wgt_tensor_free(one);
        }
        if (op_is_int(dt) && dt != WGT_BOOL) test_linspace_int(dt);
        DIFF("eye", 0, 0, wgt_eye(side[S], 5, 7, dt, &y_[S]));
        DIFF("eye empty", 0, 0, wgt_eye(side[S], 0, 3, dt, &y_[S]));
    }
    /* shape errors are statuses naming the op */
    int64_t sh2[2] = {2, 3};
    pair a = pair_rand(WGT_F32, 2, sh2, 0, 1, 0), b = pair_rand(WGT_F16, 2, sh2, 0, 1, 0);
    wgt_tensor *y = NULL;
    const wgt_tensor *mixed[2] = {a.t[0], b.t[0]};
    CHECK(wgt_cat(mixed, 2, 0, &y) == WGT_ERR_DTYPE && !y, "cat of mixed dtypes");
    int64_t big[4] = {3, 3, 0, 0};
    CHECK(wgt_pad(a.t[0], WGT_PAD_REFLECT, big, 0, &y) == WGT_ERR_SHAPE && !y, "reflect pad too large");
    CHECK(wgt_tril(wgt_tensor_numel(a.t[0]) ? a.t[0] : NULL, 0, &y) == WGT_OK, "tril");
    wgt_tensor_free(y);
    pair_free(a), pair_free(b);
    CHECK(compared > 20000, "only %d elements compared", compared);
    wgt_context_free(side[0]);
    wgt_context_free(side[1]);
    return test_finish("test_gpu_shape");
}
