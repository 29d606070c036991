/* Per-op gradients against PyTorch's: tests/fixtures/grad/grad.safetensors, written by
 * tools/make_grad_fixtures.py where torch is installed (its docstring lists the tensors). For each
 * case: the fixture's inputs (f32; index inputs made i32), the op run through wgt's autograd on this
 * adapter, loss = sum(out * gout), backward, and every input gradient torch gave compared within
 * 1e-4 of the largest magnitude of torch's gradient (plus 1e-4 relative): f32 forward and backward
 * against torch's float64 ones, rounded to f32. The case names and arguments mirror the script's
 * CASES; a case on only one side is a failure (the two are out of step). Without the
 * fixtures the test skips (exit 77) and says how to make them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/check.h"

#define MAX_IN 4

typedef wgt_status (*fwd_fn)(wgt_tensor *const *x, wgt_tensor **out);

static wgt_status f_tanh(wgt_tensor *const *x, wgt_tensor **o) { return wgt_unary(WGT_UNARY_TANH, x[0], o); }
static wgt_status f_gelu(wgt_tensor *const *x, wgt_tensor **o) { return wgt_unary(WGT_UNARY_GELU, x[0], o); }
static wgt_status f_sigmoid(wgt_tensor *const *x, wgt_tensor **o) { return wgt_unary(WGT_UNARY_SIGMOID, x[0], o); }
static wgt_status f_mul(wgt_tensor *const *x, wgt_tensor **o) { return wgt_binary(WGT_BINARY_MUL, x[0], x[1], o); }
static wgt_status f_div(wgt_tensor *const *x, wgt_tensor **o) { return wgt_binary(WGT_BINARY_DIV, x[0], x[1], o); }
static wgt_status f_sum(wgt_tensor *const *x, wgt_tensor **o) { return wgt_reduce(WGT_REDUCE_SUM, x[0], 2, 0, 0, o); }
static wgt_status f_var(wgt_tensor *const *x, wgt_tensor **o) { return wgt_reduce(WGT_REDUCE_VAR, x[0], 4, 0, 1, o); }
static wgt_status f_matmul(wgt_tensor *const *x, wgt_tensor **o) { return wgt_matmul(x[0], x[1], o); }
static wgt_status f_linear(wgt_tensor *const *x, wgt_tensor **o) { return wgt_linear(x[0], x[1], x[2], o); }
static wgt_status f_softmax(wgt_tensor *const *x, wgt_tensor **o) { return wgt_softmax(x[0], -1, o); }
static wgt_status f_log_softmax(wgt_tensor *const *x, wgt_tensor **o) { return wgt_log_softmax(x[0], -1, o); }
static wgt_status f_layer_norm(wgt_tensor *const *x, wgt_tensor **o) { return wgt_layer_norm(x[0], 1, x[1], x[2], 1e-5, o); }
static wgt_status f_rms_norm(wgt_tensor *const *x, wgt_tensor **o) { return wgt_rms_norm(x[0], 1, x[1], 1e-5, o); }
static wgt_status f_embedding(wgt_tensor *const *x, wgt_tensor **o) { return wgt_embedding(x[0], x[1], WGT_F32, o); }
static wgt_status f_ce(wgt_tensor *const *x, wgt_tensor **o)
{
    return wgt_cross_entropy(x[0], x[1], NULL, -100, 0.1, WGT_REDUCTION_MEAN, o);
}
/* probability targets (float): F.cross_entropy(x, t, weight=w, label_smoothing=0.1) and reduction none */
static wgt_status f_ce_probs_w(wgt_tensor *const *x, wgt_tensor **o)
{
    return wgt_cross_entropy(x[0], x[1], x[2], -100, 0.1, WGT_REDUCTION_MEAN, o);
}
static wgt_status f_ce_probs_none(wgt_tensor *const *x, wgt_tensor **o)
{
    return wgt_cross_entropy(x[0], x[1], NULL, -100, 0, WGT_REDUCTION_NONE, o);
}
static wgt_status f_mse(wgt_tensor *const *x, wgt_tensor **o) { return wgt_mse_loss(x[0], x[1], WGT_REDUCTION_MEAN, o); }

static wgt_status f_conv1d(wgt_tensor *const *x, wgt_tensor **o)
{
    wgt_conv_params p = {.stride = {2}, .pad_begin = {1}, .pad_end = {1}};
    return wgt_conv(x[0], x[1], x[2], &p, o);
}
static wgt_status f_conv2d(wgt_tensor *const *x, wgt_tensor **o)
{
    wgt_conv_params p = {.stride = {2, 1}, .pad_begin = {1, 0}, .pad_end = {1, 0}, .dilation = {1, 2}, .groups = 2};
    return wgt_conv(x[0], x[1], x[2], &p, o);
}
static wgt_status f_conv3d(wgt_tensor *const *x, wgt_tensor **o)
{
    wgt_conv_params p = {.stride = {1, 2, 1}, .pad_begin = {1, 1, 1}, .pad_end = {1, 1, 1}};
    return wgt_conv(x[0], x[1], NULL, &p, o);
}
static wgt_status f_convt2d(wgt_tensor *const *x, wgt_tensor **o)
{
    wgt_conv_params p = {.stride = {2, 2}, .pad_begin = {1, 0}, .pad_end = {1, 0}, .output_padding = {1, 0}, .groups = 2};
    return wgt_conv_transpose(x[0], x[1], x[2], &p, o);
}
static wgt_status f_max_pool(wgt_tensor *const *x, wgt_tensor **o)
{
    wgt_pool_params p = {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 1}, .ceil_mode = 1};
    return wgt_max_pool(x[0], 2, &p, o, NULL);
}
static wgt_status f_avg_pool(wgt_tensor *const *x, wgt_tensor **o)
{
    wgt_pool_params p = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}, .ceil_mode = 1};
    return wgt_avg_pool(x[0], 2, &p, o);
}
static wgt_status f_adaptive_avg(wgt_tensor *const *x, wgt_tensor **o)
{
    return wgt_adaptive_avg_pool(x[0], 2, (const int64_t[]){3, 4}, o);
}
static wgt_status f_bilinear(wgt_tensor *const *x, wgt_tensor **o)
{
    return wgt_interpolate(x[0], 2, WGT_INTERP_LINEAR, (const int64_t[]){7, 3}, NULL, 0, o);
}
static wgt_status f_bicubic(wgt_tensor *const *x, wgt_tensor **o)
{
    return wgt_interpolate(x[0], 2, WGT_INTERP_CUBIC, (const int64_t[]){6, 8}, NULL, 1, o);
}
static wgt_status f_nearest(wgt_tensor *const *x, wgt_tensor **o)
{
    return wgt_interpolate(x[0], 2, WGT_INTERP_NEAREST, (const int64_t[]){5, 7}, NULL, 0, o);
}

static wgt_status f_grid(wgt_tensor *const *x, wgt_tensor **o, wgt_grid_mode m, wgt_grid_padding p, int align)
{
    return wgt_grid_sample(x[0], x[1], m, p, align, o);
}
static wgt_status f_grid_bilinear(wgt_tensor *const *x, wgt_tensor **o)
{
    return f_grid(x, o, WGT_GRID_BILINEAR, WGT_GRID_PAD_ZEROS, 0);
}
static wgt_status f_grid_bicubic(wgt_tensor *const *x, wgt_tensor **o)
{
    return f_grid(x, o, WGT_GRID_BICUBIC, WGT_GRID_PAD_REFLECTION, 1);
}
static wgt_status f_grid_nearest(wgt_tensor *const *x, wgt_tensor **o)
{
    return f_grid(x, o, WGT_GRID_NEAREST, WGT_GRID_PAD_BORDER, 0);
}
static wgt_status f_scatter(wgt_tensor *const *x, wgt_tensor **o) { return wgt_scatter(x[0], 0, x[1], x[2], WGT_SCATTER_SET, o); }
static wgt_status f_scatter_add(wgt_tensor *const *x, wgt_tensor **o) { return wgt_scatter_add(x[0], 1, x[1], x[2], o); }
static wgt_status f_index_add(wgt_tensor *const *x, wgt_tensor **o) { return wgt_index_add(x[0], 1, x[1], x[2], -1.5, o); }
static wgt_status f_cumprod(wgt_tensor *const *x, wgt_tensor **o) { return wgt_scan(WGT_SCAN_CUMPROD, x[0], 1, o, NULL); }
static wgt_status f_prod(wgt_tensor *const *x, wgt_tensor **o) { return wgt_reduce(WGT_REDUCE_PROD, x[0], 4, 0, 0, o); }
static wgt_status f_digamma(wgt_tensor *const *x, wgt_tensor **o) { return wgt_unary(WGT_UNARY_DIGAMMA, x[0], o); }
static wgt_status f_sdpa_mask(wgt_tensor *const *x, wgt_tensor **o)
{
    wgt_sdpa_params p = {0, 0, 0};
    return wgt_sdpa(x[0], x[1], x[2], x[3], &p, o);
}
static wgt_status f_sort(wgt_tensor *const *x, wgt_tensor **o) { return wgt_sort(x[0], 1, 1, o, NULL); }
static wgt_status f_repeat(wgt_tensor *const *x, wgt_tensor **o)
{
    return wgt_repeat(x[0], (const int64_t[]){2, 3, 2}, 3, o);
}

/* the rules of ops first declared without one, pad's other modes and scatter's reductions */
static wgt_status f_diff(wgt_tensor *const *x, wgt_tensor **o) { return wgt_diff(x[0], 2, -1, x[1], x[2], o); }
static wgt_status f_trace(wgt_tensor *const *x, wgt_tensor **o) { return wgt_trace(x[0], o); }
static wgt_status f_diag2(wgt_tensor *const *x, wgt_tensor **o) { return wgt_diag(x[0], 2, o); }
static wgt_status f_diag_m1(wgt_tensor *const *x, wgt_tensor **o) { return wgt_diag(x[0], -1, o); }
static wgt_status f_diag_embed(wgt_tensor *const *x, wgt_tensor **o) { return wgt_diag_embed(x[0], 1, 0, 2, o); }
static wgt_status f_cdist2(wgt_tensor *const *x, wgt_tensor **o) { return wgt_cdist(x[0], x[1], 2, WGT_CDIST_NO_MM, o); }
static wgt_status f_cdist1(wgt_tensor *const *x, wgt_tensor **o) { return wgt_cdist(x[0], x[1], 1, 0, o); }
static wgt_status f_cdist3(wgt_tensor *const *x, wgt_tensor **o) { return wgt_cdist(x[0], x[1], 3, 0, o); }
static wgt_status f_cdist05(wgt_tensor *const *x, wgt_tensor **o) { return wgt_cdist(x[0], x[1], 0.5, 0, o); }
static wgt_status f_cdist_inf(wgt_tensor *const *x, wgt_tensor **o) { return wgt_cdist(x[0], x[1], INFINITY, 0, o); }
static wgt_status f_cosine(wgt_tensor *const *x, wgt_tensor **o) { return wgt_cosine_similarity(x[0], x[1], -1, 1e-8, o); }
static wgt_status f_huber(wgt_tensor *const *x, wgt_tensor **o) { return wgt_huber_loss(x[0], x[1], WGT_REDUCTION_MEAN, 0.5, o); }
static wgt_status f_bernoulli(wgt_tensor *const *x, wgt_tensor **o)
{
    wgt_generator *g = NULL;
    wgt_status st = wgt_generator_create(5, &g);
    if (!st) st = wgt_bernoulli(g, x[0], o);
    wgt_generator_free(g);
    return st;
}
static wgt_status f_masked_select(wgt_tensor *const *x, wgt_tensor **o)
{
    wgt_tensor *m = NULL; /* the fixture holds the mask as 0/1 floats */
    wgt_status st = wgt_tensor_cast(x[1], WGT_BOOL, &m);
    if (!st) st = wgt_masked_select(x[0], m, o);
    wgt_tensor_free(m);
    return st;
}
static wgt_status f_index_put(wgt_tensor *const *x, wgt_tensor **o) { return wgt_index_put(x[0], (const wgt_tensor *const *)x + 2, 1, x[1], 0, o); }
static wgt_status f_index_put_acc(wgt_tensor *const *x, wgt_tensor **o) { return wgt_index_put(x[0], (const wgt_tensor *const *)x + 2, 2, x[1], 1, o); }
/* F.pad(x, (1, 1, 2, 1)) of a [2, 3, 4]: the last dim by 1 and 1, the one before by 2 and 1 */
static const int64_t torch_pads[6] = {0, 2, 1, 0, 1, 1};
static wgt_status f_pad_reflect(wgt_tensor *const *x, wgt_tensor **o) { return wgt_pad(x[0], WGT_PAD_REFLECT, torch_pads, 0, o); }
static wgt_status f_pad_replicate(wgt_tensor *const *x, wgt_tensor **o) { return wgt_pad(x[0], WGT_PAD_REPLICATE, torch_pads, 0, o); }
static wgt_status f_pad_circular(wgt_tensor *const *x, wgt_tensor **o) { return wgt_pad(x[0], WGT_PAD_CIRCULAR, torch_pads, 0, o); }
static wgt_status f_scatter_prod(wgt_tensor *const *x, wgt_tensor **o) { return wgt_scatter(x[0], 0, x[1], x[2], WGT_SCATTER_MUL, o); }
static wgt_status f_scatter_amax(wgt_tensor *const *x, wgt_tensor **o) { return wgt_scatter(x[0], 0, x[1], x[2], WGT_SCATTER_AMAX, o); }
static wgt_status f_scatter_amin(wgt_tensor *const *x, wgt_tensor **o) { return wgt_scatter(x[0], 1, x[1], x[2], WGT_SCATTER_AMIN, o); }

/* index: bit i = input i holds integer values (made i32). Every case must be in the fixture and every
 * case of the fixture (its metadata "cases", the names of index.json) must be here: a case on one side
 * only means the script and this test are out of step, and fails. */
static const struct {
    const char *name;
    fwd_fn fwd;
    int n_in;
    unsigned index;
} cases[] = {
    {"tanh", f_tanh, 1, 0}, {"gelu", f_gelu, 1, 0}, {"sigmoid", f_sigmoid, 1, 0},
    {"mul_broadcast", f_mul, 2, 0}, {"div", f_div, 2, 0}, {"sum_dim1", f_sum, 1, 0}, {"var_dim2", f_var, 1, 0},
    {"matmul", f_matmul, 2, 0}, {"linear", f_linear, 3, 0}, {"softmax", f_softmax, 1, 0},
    {"log_softmax", f_log_softmax, 1, 0}, {"layer_norm", f_layer_norm, 3, 0}, {"rms_norm", f_rms_norm, 2, 0},
    {"embedding", f_embedding, 2, 2}, {"cross_entropy_smoothing", f_ce, 2, 2}, {"mse_loss", f_mse, 2, 0},
    {"conv1d", f_conv1d, 3, 0}, {"conv2d_groups_dilation", f_conv2d, 3, 0}, {"conv3d", f_conv3d, 2, 0},
    {"conv_transpose2d", f_convt2d, 3, 0}, {"max_pool2d", f_max_pool, 1, 0}, {"avg_pool2d", f_avg_pool, 1, 0},
    {"adaptive_avg_pool2d", f_adaptive_avg, 1, 0}, {"interpolate_bilinear", f_bilinear, 1, 0},
    {"interpolate_bicubic_align", f_bicubic, 1, 0}, {"interpolate_nearest", f_nearest, 1, 0},
    {"grid_sample_bilinear_zeros", f_grid_bilinear, 2, 0},
    {"grid_sample_bicubic_reflection_align", f_grid_bicubic, 2, 0},
    {"grid_sample_nearest_border", f_grid_nearest, 2, 0}, {"scatter", f_scatter, 3, 2},
    {"scatter_add", f_scatter_add, 3, 2}, {"index_add_alpha", f_index_add, 3, 2},
    {"cumprod_zeros", f_cumprod, 1, 0}, {"prod_dim_zeros", f_prod, 1, 0}, {"digamma", f_digamma, 1, 0},
    {"sdpa_float_mask", f_sdpa_mask, 4, 0}, {"sort_descending", f_sort, 1, 0}, {"repeat", f_repeat, 1, 0},
    {"diff_prepend_append", f_diff, 3, 0}, {"trace", f_trace, 1, 0}, {"diag_matrix", f_diag2, 1, 0},
    {"diag_vector", f_diag_m1, 1, 0}, {"diag_embed", f_diag_embed, 1, 0}, {"cdist_p2", f_cdist2, 2, 0},
    {"cdist_p1", f_cdist1, 2, 0}, {"cdist_p3", f_cdist3, 2, 0}, {"cdist_p0_5", f_cdist05, 2, 0},
    {"cdist_inf", f_cdist_inf, 2, 0}, {"cosine_similarity_broadcast", f_cosine, 2, 0},
    {"huber_loss", f_huber, 2, 0}, {"bernoulli", f_bernoulli, 1, 0}, {"masked_select", f_masked_select, 2, 0},
    {"index_put", f_index_put, 3, 4}, {"index_put_accumulate", f_index_put_acc, 4, 12},
    {"pad_reflect", f_pad_reflect, 1, 0}, {"pad_replicate", f_pad_replicate, 1, 0},
    {"pad_circular", f_pad_circular, 1, 0}, {"scatter_prod_zeros", f_scatter_prod, 3, 2},
    {"scatter_amax", f_scatter_amax, 3, 2}, {"scatter_amin", f_scatter_amin, 3, 2},
    {"cross_entropy_probs_target_weight", f_ce_probs_w, 3, 0}, {"cross_entropy_probs_none_nd", f_ce_probs_none, 2, 0},
};

/* name is one of the comma-separated names of list */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == 0)) return 1;
    return 0;
}

static wgt_tensor *load(wgt_context *ctx, const wgt_safetensors *f, const char *key, int as_index)
{
    const wgt_st_tensor *t = wgt_safetensors_find(f, key);
    if (!t || t->type != WGT_FTYPE_F32) return NULL;
    wgt_tensor *x = NULL, *i = NULL;
    if (wgt_tensor_from_host(ctx, WGT_F32, (int)t->n_dims, t->shape, t->data, &x)) return NULL;
    if (!as_index) return x;
    wgt_status st = wgt_tensor_cast(x, WGT_I32, &i);
    wgt_tensor_free(x);
    return st ? NULL : i;
}

/* |got - want| <= 1e-4 (max |want| + |want|) everywhere; prints the worst element otherwise */
static int close_enough(const char *name, int input, const float *got, const float *want, int64_t n)
{
    double scale = 0;
    for (int64_t j = 0; j < n; j++) scale = fmax(scale, fabs(want[j]));
    int64_t worst = -1;
    double excess = 0;
    for (int64_t j = 0; j < n; j++) {
        double e = fabs((double)got[j] - want[j]) - 1e-4 * (scale + fabs(want[j]));
        if (!(e <= 0) && (worst < 0 || e > excess)) worst = j, excess = e;
    }
    if (worst >= 0)
        fprintf(stderr, "%s: input %d element %lld: %.8g, torch %.8g (largest |torch| %.3g)\n", name, input,
                (long long)worst, got[worst], want[worst], scale);
    return worst < 0;
}

static void run_case(wgt_context *ctx, const wgt_safetensors *f, int k)
{
    const char *name = cases[k].name;
    char key[128];
    wgt_tensor *x[MAX_IN] = {0}, *y = NULL, *gout = NULL, *p = NULL, *loss = NULL;
    int ok = 1;
    for (int i = 0; i < cases[k].n_in && ok; i++) {
        snprintf(key, sizeof key, "%s.in%d", name, i);
        x[i] = load(ctx, f, key, cases[k].index >> i & 1);
        snprintf(key, sizeof key, "%s.grad%d", name, i);
        if (x[i] && wgt_safetensors_find(f, key)) MUST(wgt_tensor_set_requires_grad(x[i], 1));
        ok = x[i] != NULL;
    }
    snprintf(key, sizeof key, "%s.in%d", name, cases[k].n_in);
    CHECK(!wgt_safetensors_find(f, key), "%s: the fixture has more than the %d inputs this test passes", name,
          cases[k].n_in);
    snprintf(key, sizeof key, "%s.gout", name);
    if (ok) ok = (gout = load(ctx, f, key, 0)) != NULL;
    CHECK(ok, "%s: the fixture lacks its inputs or output gradient (make_grad_fixtures.py and this test differ)",
          name);
    wgt_status st = ok ? cases[k].fwd(x, &y) : WGT_OK;
    if (ok && !st) st = wgt_binary(WGT_BINARY_MUL, y, gout, &p);
    if (ok && !st) st = wgt_reduce(WGT_REDUCE_SUM, p, 0, 0, 0, &loss);
    if (ok && !st) st = wgt_backward(loss, NULL, 0);
    CHECK(!ok || !st, "%s: forward/backward: %s: %s", name, wgt_status_str(st), wgt_errmsg());
    for (int i = 0; i < cases[k].n_in && ok && !st; i++) {
        snprintf(key, sizeof key, "%s.grad%d", name, i);
        const wgt_st_tensor *want = wgt_safetensors_find(f, key);
        if (!want) continue;
        wgt_tensor *g = NULL;
        MUST(wgt_tensor_grad(x[i], &g));
        CHECK(g && wgt_tensor_numel(g) == want->n_elements, "%s: input %d: no gradient, or a wrongly sized one", name, i);
        if (!g || wgt_tensor_numel(g) != want->n_elements) {
            wgt_tensor_free(g);
            continue;
        }
        float *got = malloc(sizeof(float) * (want->n_elements ? want->n_elements : 1));
        if (!got) exit(1);
        MUST(wgt_tensor_to_host(g, got, sizeof(float) * want->n_elements));
        CHECK(close_enough(name, i, got, want->data, want->n_elements), "%s: input %d differs from torch's gradient",
              name, i);
        free(got);
        wgt_tensor_free(g);
    }
    for (int i = 0; i < MAX_IN; i++) wgt_tensor_free(x[i]);
    wgt_tensor_free(y), wgt_tensor_free(gout), wgt_tensor_free(p), wgt_tensor_free(loss);
}

int main(void)
{
    const char *root = getenv("WGT_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/grad/grad.safetensors", root ? root : ".");
    if (access(path, R_OK) != 0) {
        printf("SKIP: tests/fixtures/grad missing: run tools/make_grad_fixtures.py on a machine with torch\n");
        return 77;
    }
    wgt_safetensors *f;
    MUST(wgt_safetensors_open(path, &f));
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    const char *in_fixture = wgt_safetensors_metadata(f, "cases");
    CHECK(in_fixture && *in_fixture, "the fixture has no \"cases\" metadata: regenerate it with tools/make_grad_fixtures.py");
    int n_cases = (int)(sizeof cases / sizeof cases[0]);
    for (int k = 0; k < n_cases; k++) {
        CHECK(listed(in_fixture, cases[k].name), "%s is not in the fixture (regenerate it with tools/make_grad_fixtures.py)",
              cases[k].name);
        if (listed(in_fixture, cases[k].name)) run_case(ctx, f, k);
    }
    /* the other way round: a case of the fixture this test does not run */
    for (const char *p = in_fixture; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        size_t n = strchr(p, ',') ? (size_t)(strchr(p, ',') - p) : strlen(p);
        int known = 0;
        for (int k = 0; k < n_cases && !known; k++) known = strlen(cases[k].name) == n && !strncmp(cases[k].name, p, n);
        CHECK(known, "the fixture's case %.*s has no forward here: add it to cases[]", (int)n, p);
    }
    wgt_context_free(ctx);
    wgt_safetensors_free(f);
    return test_finish("test_gpu_grad_torch");
}
