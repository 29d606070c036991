/* Graph semantics of autograd, against values worked out by hand: accumulation into .grad across
 * backward calls, zero_grad, the no-grad scope, detach, retain_graph (0: a second backward fails
 * clearly; 1: twice works), a diamond graph and an input used twice by one op, grad_output, handles
 * made by wgt_tensor_ref, the errors of misuse (integer leaves, non-leaves, a non-differentiable op
 * on the path), and graph memory: the device's in-use bytes return to their baseline. */
#include <math.h>
#include <string.h>

#include "support/check.h"

static wgt_context *ctx;
static const float xv[4] = {0.5f, -1.25f, 2.0f, 0.75f};

static wgt_tensor *leaf(void)
{
    wgt_tensor *x;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){4}, xv, &x));
    MUST(wgt_tensor_set_requires_grad(x, 1));
    return x;
}

static wgt_tensor *bin(wgt_binary_op op, const wgt_tensor *a, const wgt_tensor *b)
{
    wgt_tensor *y;
    MUST(wgt_binary(op, a, b, &y));
    return y;
}

static wgt_tensor *sum(const wgt_tensor *a)
{
    wgt_tensor *y;
    MUST(wgt_reduce(WGT_REDUCE_SUM, a, 0, 0, 0, &y));
    return y;
}

/* sum(x * x): gradient 2x */
static wgt_tensor *square_loss(const wgt_tensor *x)
{
    wgt_tensor *y = bin(WGT_BINARY_MUL, x, x), *l = sum(y);
    wgt_tensor_free(y);
    return l;
}

/* Compare x's .grad with want[i] = f(xv[i]). */
static void expect_grad(const char *what, const wgt_tensor *x, const double *want)
{
    wgt_tensor *g;
    MUST(wgt_tensor_grad(x, &g));
    CHECK(g != NULL, "%s: no gradient", what);
    if (!g) return;
    CHECK(wgt_tensor_dtype(g) == WGT_F32 && wgt_tensor_numel(g) == 4, "%s: gradient of the wrong kind", what);
    float h[4];
    MUST(wgt_tensor_to_host(g, h, sizeof h));
    for (int i = 0; i < 4; i++)
        CHECK(fabs(h[i] - want[i]) <= 1e-5 * (1 + fabs(want[i])), "%s: [%d] %.7g, want %.7g", what, i, h[i], want[i]);
    wgt_tensor_free(g);
}

static void accumulation_and_zero_grad(void)
{
    wgt_tensor *x = leaf(), *l;
    double want[4];
    for (int k = 1; k <= 2; k++) { /* two graphs, two backward calls: .grad sums them */
        l = square_loss(x);
        MUST(wgt_backward(l, NULL, 0));
        wgt_tensor_free(l);
        for (int i = 0; i < 4; i++) want[i] = 2.0 * k * xv[i];
        expect_grad(k == 1 ? "first backward" : "accumulated over two backward calls", x, want);
    }
    wgt_tensor_zero_grad(x);
    wgt_tensor *g;
    MUST(wgt_tensor_grad(x, &g));
    CHECK(g == NULL, "zero_grad leaves no gradient");
    l = square_loss(x);
    MUST(wgt_backward(l, NULL, 0));
    for (int i = 0; i < 4; i++) want[i] = 2.0 * xv[i];
    expect_grad("after zero_grad", x, want);
    wgt_tensor_free(l);
    wgt_tensor_free(x);
}

static void no_grad_and_detach(void)
{
    wgt_tensor *x = leaf();
    CHECK(wgt_grad_mode_get() == 1, "grad mode starts on");
    wgt_grad_mode_set(0);
    wgt_tensor *l = square_loss(x);
    wgt_grad_mode_set(1);
    CHECK(!wgt_tensor_requires_grad(l), "a result computed under no-grad does not require grad");
    wgt_status st = wgt_backward(l, NULL, 0);
    CHECK(st == WGT_ERR_MISUSE && strstr(wgt_context_errmsg(ctx), "does not require grad"),
          "backward of a no-grad result: %s", wgt_context_errmsg(ctx));
    wgt_tensor_free(l);
    /* detach: the detached factor is a constant, y = d * x has gradient d = x */
    wgt_tensor *d;
    MUST(wgt_tensor_detach(x, &d));
    CHECK(!wgt_tensor_requires_grad(d) && wgt_tensor_is_leaf(d), "detach gives a leaf without requires_grad");
    wgt_tensor *y = bin(WGT_BINARY_MUL, d, x);
    l = sum(y);
    MUST(wgt_backward(l, NULL, 0));
    double want[4];
    for (int i = 0; i < 4; i++) want[i] = xv[i];
    expect_grad("detached factor", x, want);
    wgt_tensor *g;
    MUST(wgt_tensor_grad(d, &g));
    CHECK(g == NULL, "the detached tensor gets no gradient");
    wgt_tensor_free(y), wgt_tensor_free(l), wgt_tensor_free(d), wgt_tensor_free(x);
}

static void retain_graph(void)
{
    wgt_tensor *x = leaf(), *l = square_loss(x);
    double want[4];
    MUST(wgt_backward(l, NULL, 1));
    MUST(wgt_backward(l, NULL, 1));
    for (int i = 0; i < 4; i++) want[i] = 4.0 * xv[i];
    expect_grad("retain_graph=1 twice", x, want);
    MUST(wgt_backward(l, NULL, 0));
    wgt_status st = wgt_backward(l, NULL, 0);
    CHECK(st == WGT_ERR_MISUSE && strstr(wgt_context_errmsg(ctx), "retain_graph"),
          "a second backward through a freed graph: %d %s", (int)st, wgt_context_errmsg(ctx));
    for (int i = 0; i < 4; i++) want[i] = 6.0 * xv[i];
    expect_grad("the failed backward added nothing", x, want);
    wgt_tensor_free(l), wgt_tensor_free(x);
}

static void diamond(void)
{
    /* y = (2x) * exp(x) + x * x: x reaches the loss along three edges */
    wgt_tensor *x = leaf(), *two, *e;
    MUST(wgt_full(ctx, WGT_F32, 0, NULL, 2.0, &two));
    MUST(wgt_unary(WGT_UNARY_EXP, x, &e));
    wgt_tensor *a = bin(WGT_BINARY_MUL, x, two), *b = bin(WGT_BINARY_MUL, a, e), *s = bin(WGT_BINARY_MUL, x, x);
    wgt_tensor *y = bin(WGT_BINARY_ADD, b, s), *l = sum(y);
    MUST(wgt_backward(l, NULL, 0));
    double want[4];
    for (int i = 0; i < 4; i++) want[i] = 2 * exp(xv[i]) + 2 * xv[i] * exp(xv[i]) + 2 * xv[i];
    expect_grad("diamond", x, want);
    wgt_tensor *t[] = {two, e, a, b, s, y, l, x};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) wgt_tensor_free(t[i]);
}

static void grad_output_and_refs(void)
{
    wgt_tensor *x = leaf(), *r = wgt_tensor_ref(x), *three, *go;
    CHECK(wgt_tensor_requires_grad(r), "a wgt_tensor_ref handle is the same tensor");
    MUST(wgt_full(ctx, WGT_F32, 0, NULL, 3.0, &three));
    const float gv[4] = {1, -2, 0.5f, 4};
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){4}, gv, &go));
    wgt_tensor *y = bin(WGT_BINARY_MUL, r, three);
    CHECK(wgt_backward(y, NULL, 0) == WGT_ERR_SHAPE, "a 4-element loss needs grad_output");
    MUST(wgt_backward(y, go, 0));
    double want[4];
    for (int i = 0; i < 4; i++) want[i] = 3.0 * gv[i];
    expect_grad("grad_output through a ref handle", x, want);
    wgt_tensor_free(y), wgt_tensor_free(go), wgt_tensor_free(three), wgt_tensor_free(r), wgt_tensor_free(x);
}

static void misuse(void)
{
    wgt_tensor *i, *x = leaf();
    MUST(wgt_tensor_zeros(ctx, WGT_I32, 1, (int64_t[]){4}, &i));
    CHECK(wgt_tensor_set_requires_grad(i, 1) == WGT_ERR_DTYPE, "an integer leaf cannot require grad");
    wgt_tensor *y = bin(WGT_BINARY_MUL, x, x);
    CHECK(wgt_tensor_set_requires_grad(y, 0) == WGT_ERR_MISUSE, "an op result cannot take the flag");
    /* an integer result (argmax) never requires grad, as in PyTorch: the loss's gradient flows
     * through y only, the index being a constant of the step: d sum(y * a) / dx = 2 x a */
    wgt_tensor *am, *amf;
    MUST(wgt_reduce(WGT_REDUCE_ARGMAX, y, 0, 0, 0, &am));
    CHECK(!wgt_tensor_requires_grad(am), "argmax's integer result requires grad");
    MUST(wgt_tensor_cast(am, WGT_F32, &amf));
    wgt_tensor *p = bin(WGT_BINARY_MUL, y, amf), *l = sum(p);
    MUST(wgt_backward(l, NULL, 0));
    int32_t a = -1;
    MUST(wgt_tensor_to_host(am, &a, sizeof a));
    double want[4];
    for (int k = 0; k < 4; k++) want[k] = 2.0 * xv[k] * a;
    expect_grad("through an argmax (a constant)", x, want);
    wgt_tensor_zero_grad(x);
    /* a comparison's mask is a constant too: where(x > 0, x, 0) is relu */
    wgt_tensor *zero, *mask, *w;
    MUST(wgt_full(ctx, WGT_F32, 0, NULL, 0.0, &zero));
    MUST(wgt_binary(WGT_BINARY_GT, x, zero, &mask));
    MUST(wgt_where(mask, x, zero, &w));
    wgt_tensor *lw = sum(w);
    MUST(wgt_backward(lw, NULL, 0));
    for (int k = 0; k < 4; k++) want[k] = xv[k] > 0;
    expect_grad("where(x > 0, x, 0)", x, want);
    /* an op without a gradient says so, naming itself (declared: op_record_nondiff) */
    wgt_tensor *h, *lh;
    MUST(wgt_histc(x, 4, -2, 2, &h));
    lh = bin(WGT_BINARY_MUL, h, x);
    wgt_tensor *lhs = sum(lh);
    wgt_status st = wgt_backward(lhs, NULL, 0);
    CHECK(st == WGT_ERR_UNSUPPORTED && strstr(wgt_context_errmsg(ctx), "histc is not differentiable"),
          "histc on the path: %d %s", (int)st, wgt_context_errmsg(ctx));
    wgt_tensor *t[] = {i, x, y, am, amf, p, l, zero, mask, w, lw, h, lh, lhs};
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) wgt_tensor_free(t[k]);
}

static uint64_t in_use(void)
{
    wgt_memory_stats m;
    MUST(wgt_context_memory_stats(ctx, &m));
    return m.in_use_bytes;
}

static void memory(void)
{
    wgt_adapter_info info;
    MUST(wgt_context_adapter_info(ctx, &info));
    if (info.backend == WGT_BACKEND_CPU) { /* the CPU reference keeps no device-memory count */
        printf("SKIP: graph memory: the CPU reference context has no in-use byte count\n");
        return;
    }
    /* a chain of 40 ops over [256, 64]: saved tensors are device memory */
    wgt_tensor *x;
    MUST(wgt_tensor_zeros(ctx, WGT_F32, 2, (int64_t[]){256, 64}, &x));
    MUST(wgt_tensor_set_requires_grad(x, 1));
    uint64_t base = in_use();
    for (int retain = 0; retain < 2; retain++) {
        wgt_tensor *h = wgt_tensor_ref(x);
        for (int k = 0; k < 40; k++) {
            wgt_tensor *n;
            MUST(wgt_unary(k % 2 ? WGT_UNARY_TANH : WGT_UNARY_SIN, h, &n));
            wgt_tensor_free(h);
            h = n;
        }
        wgt_tensor *l = sum(h);
        wgt_tensor_free(h); /* the graph alone holds the intermediates now */
        CHECK(in_use() > base, "the graph holds saved tensors");
        MUST(wgt_backward(l, NULL, retain));
        wgt_tensor_free(l);
        wgt_tensor_zero_grad(x);
        CHECK(in_use() == base, "retain_graph=%d: %llu bytes in use after backward and frees, baseline %llu", retain,
              (unsigned long long)in_use(), (unsigned long long)base);
    }
    wgt_tensor_free(x);
}

int main(void)
{
    MUST(wgt_context_create(NULL, &ctx));
    accumulation_and_zero_grad();
    no_grad_and_detach();
    retain_graph();
    diamond();
    grad_output_and_refs();
    misuse();
    memory();
    wgt_context_free(ctx);
    return test_finish("test_gpu_grad_graph");
}
