/* In-place writes under autograd: wgt_tensor_assign cannot be recorded, so (1) it is refused while
 * grad mode is on and either side requires grad, and (2) every in-place write (assign, an
 * optimizer step) bumps its storage's version, and backward through a node whose saved tensor was
 * written since fails with WGT_ERR_MISUSE instead of giving a wrong gradient (PyTorch's version
 * counter). Writes into tensors no node saved leave backward and its gradients as they were. */
#include <math.h>
#include <string.h>

#include "support/check.h"

static wgt_tensor *vec(wgt_context *ctx, const float *v, int64_t n)
{
    wgt_tensor *t = NULL;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &n, v, &t));
    return t;
}

static wgt_status sum_backward(wgt_tensor *y, int retain)
{
    wgt_tensor *s = NULL;
    wgt_status st = wgt_reduce(WGT_REDUCE_SUM, y, 0, 0, 0, &s);
    if (!st) st = wgt_backward(s, NULL, retain);
    wgt_tensor_free(s);
    return st;
}

static void grad_is(wgt_tensor *x, const float *want, int n, const char *what)
{
    wgt_tensor *g = NULL;
    MUST(wgt_tensor_grad(x, &g));
    float got[8] = {0};
    CHECK(g && wgt_tensor_numel(g) == n, "%s: no gradient", what);
    if (!g) return;
    MUST(wgt_tensor_to_host(g, got, sizeof(float) * (size_t)n));
    for (int i = 0; i < n; i++) CHECK(fabsf(got[i] - want[i]) < 1e-6f, "%s: grad[%d] %g, want %g", what, i, got[i], want[i]);
    wgt_tensor_free(g);
}

int main(void)
{
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    const float a[4] = {0.5f, -1.0f, 2.0f, 1.5f}, b[4] = {3.0f, 0.25f, -2.0f, 1.0f}, ones[4] = {1, 1, 1, 1};

    /* 1. mul saves both inputs: c (no grad) written after the product, then backward: refused */
    wgt_tensor *x = vec(ctx, a, 4), *c = vec(ctx, b, 4), *o = vec(ctx, ones, 4), *y = NULL;
    MUST(wgt_tensor_set_requires_grad(x, 1));
    MUST(wgt_binary(WGT_BINARY_MUL, x, c, &y));
    MUST(wgt_tensor_assign(c, o));
    wgt_status st = sum_backward(y, 0);
    CHECK(st == WGT_ERR_MISUSE && strstr(wgt_errmsg(), "written in place"),
          "backward through a product whose saved factor was overwritten: %s (%s), want WGT_ERR_MISUSE", wgt_status_str(st),
          wgt_errmsg());
    wgt_tensor_free(y), y = NULL;

    /* 2. the same write before the product: the node saved the new values, backward is right */
    MUST(wgt_binary(WGT_BINARY_MUL, x, c, &y));
    MUST(sum_backward(y, 0));
    grad_is(x, ones, 4, "d sum(x * c) / dx after the write");
    wgt_tensor_zero_grad(x);
    wgt_tensor_free(y), y = NULL;

    /* 3. add saves nothing: writing its operand afterwards changes no gradient */
    MUST(wgt_binary(WGT_BINARY_ADD, x, c, &y));
    MUST(wgt_tensor_assign(c, o));
    MUST(sum_backward(y, 0));
    grad_is(x, ones, 4, "d sum(x + c) / dx");
    wgt_tensor_zero_grad(x);
    wgt_tensor_free(y), y = NULL;

    /* 4. a write through another view of the saved tensor's storage, under no-grad, into a leaf */
    MUST(wgt_binary(WGT_BINARY_MUL, x, x, &y));
    wgt_tensor *v = NULL, *two = NULL;
    wgt_grad_mode_set(0);
    MUST(wgt_tensor_narrow(x, 0, 1, 2, &v));
    MUST(wgt_full(ctx, WGT_F32, 1, (const int64_t[]){2}, 2.0, &two));
    MUST(wgt_tensor_assign(v, two)); /* allowed: grad mode is off (an optimizer's kind of write) */
    wgt_grad_mode_set(1);
    st = sum_backward(y, 0);
    CHECK(st == WGT_ERR_MISUSE, "backward of x * x after x was written through a view: %s, want WGT_ERR_MISUSE",
          wgt_status_str(st));
    wgt_tensor_free(v), wgt_tensor_free(y), y = NULL;

    /* 5. with grad mode on, a write into or from a tensor that requires grad is refused */
    wgt_tensor *z = vec(ctx, b, 4);
    st = wgt_tensor_assign(z, x);
    CHECK(st == WGT_ERR_UNSUPPORTED && strstr(wgt_errmsg(), "source requires grad"),
          "assign from a tensor requiring grad: %s (%s)", wgt_status_str(st), wgt_errmsg());
    st = wgt_tensor_assign(x, z);
    CHECK(st == WGT_ERR_UNSUPPORTED && strstr(wgt_errmsg(), "destination requires grad"),
          "assign into a leaf requiring grad: %s (%s)", wgt_status_str(st), wgt_errmsg());
    MUST(wgt_tensor_narrow(x, 0, 0, 2, &v)); /* a recorded view of x: tracked too */
    st = wgt_tensor_assign(v, two);
    CHECK(st == WGT_ERR_UNSUPPORTED, "assign into a view of a leaf requiring grad: %s", wgt_status_str(st));
    wgt_tensor_free(v);

    /* 6. an optimizer step writes its parameters in place: a graph retained across it is stale */
    wgt_optimizer *opt = NULL;
    wgt_optimizer_options oo = wgt_optimizer_defaults(WGT_OPTIM_SGD);
    oo.lr = 0.1;
    MUST(wgt_optimizer_create(ctx, &oo, &x, 1, &opt));
    MUST(wgt_binary(WGT_BINARY_MUL, x, x, &y));
    MUST(sum_backward(y, 1));
    wgt_tensor *g = NULL;
    MUST(wgt_tensor_grad(x, &g));
    MUST(wgt_optimizer_step(opt, (const wgt_tensor *const *)&g));
    st = sum_backward(y, 0);
    CHECK(st == WGT_ERR_MISUSE, "a second backward after an optimizer step: %s, want WGT_ERR_MISUSE", wgt_status_str(st));
    wgt_tensor_free(g), wgt_tensor_free(y);
    wgt_optimizer_free(opt);

    wgt_tensor_free(x), wgt_tensor_free(c), wgt_tensor_free(o), wgt_tensor_free(z), wgt_tensor_free(two);
    wgt_context_free(ctx);
    return test_finish("test_gpu_grad_inplace");
}
