/* Backward formulas of the elementwise family (src/ops/elementwise.c): unary, binary (broadcast:
 * gradients summed back to each input's shape) and where. Each is dy/dx written with public ops;
 * half inputs are read as f32 so the derivative is computed at f32 precision. */
#include <math.h>

#include "autograd/autograd.h"
#include "ops/ops.h"
#include "core/error.h"

static wgt_status no_gradient(ag_call *c, const char *op, const char *why)
{
    return wgt_ctx_error(c->ctx, WGT_ERR_UNSUPPORTED,
                         "wgt_backward: %s has no gradient (%s), yet the loss depends on it through a tensor that "
                         "requires grad: detach its result (wgt_tensor_detach)",
                         op, why);
}

uint32_t ag_saves_unary(const void *params)
{
    switch (((const op_grad_unary *)params)->op) {
    case WGT_UNARY_EXP: case WGT_UNARY_EXP2: case WGT_UNARY_EXPM1: case WGT_UNARY_SQRT: case WGT_UNARY_RSQRT:
    case WGT_UNARY_RECIPROCAL: case WGT_UNARY_TAN: case WGT_UNARY_TANH: case WGT_UNARY_SIGMOID:
    case WGT_UNARY_ERFINV:
        return AG_SAVE_OUT;
    default:
        return 1;
    }
}

/* psi'(z) for z > 0: six steps of psi'(z) = psi'(z + 1) + 1/z^2, then the asymptotic series at
 * z + 6 >= 7: 1/z + 1/2z^2 + 1/6z^3 - 1/30z^5 + 1/42z^7 - 1/30z^9 (next term 5/66 z^-11 < 1e-10). */
static wgt_tensor *trigamma_from_1(ag_call *c, const wgt_tensor *z)
{
    wgt_tensor *sum = NULL;
    for (int k = 0; k < 6; k++) {
        wgt_tensor *t = ag_un(c, WGT_UNARY_RECIPROCAL, ag_un(c, WGT_UNARY_SQUARE, ag_adds(c, z, k)));
        sum = sum ? ag_add(c, sum, t) : t;
    }
    wgt_tensor *w = ag_adds(c, z, 6), *iw = ag_un(c, WGT_UNARY_RECIPROCAL, w), *iw2 = ag_un(c, WGT_UNARY_SQUARE, iw);
    /* iw (1 + iw/2 + iw2 (1/6 - iw2 (1/30 - iw2 (1/42 - iw2/30)))) */
    wgt_tensor *s = ag_adds(c, ag_muls(c, iw2, -1.0 / 30), 1.0 / 42);
    s = ag_adds(c, ag_muls(c, ag_mul(c, iw2, s), -1), 1.0 / 30);
    s = ag_adds(c, ag_muls(c, ag_mul(c, iw2, s), -1), 1.0 / 6);
    s = ag_add(c, ag_adds(c, ag_muls(c, iw, 0.5), 1), ag_mul(c, iw2, s));
    return ag_add(c, sum, ag_mul(c, iw, s));
}

/* The trigamma function psi'(x), digamma's derivative: below 0 through the reflection
 * psi'(1 - x) + psi'(x) = pi^2 / sin^2(pi x) (a pole at 0 and the negative integers, as PyTorch). */
static wgt_tensor *trigamma(ag_call *c, const wgt_tensor *x)
{
    const double pi = 3.14159265358979323846;
    wgt_tensor *low = ag_bin(c, WGT_BINARY_LT, x, ag_scalar(c, 0));
    wgt_tensor *z = ag_where(c, low, ag_sub(c, ag_scalar(c, 1), x), x);
    wgt_tensor *t = trigamma_from_1(c, z);
    wgt_tensor *refl = ag_div(c, ag_scalar(c, pi * pi), ag_un(c, WGT_UNARY_SQUARE, ag_un(c, WGT_UNARY_SIN, ag_muls(c, x, pi))));
    return ag_where(c, low, ag_sub(c, refl, t), t);
}

/* dy/dx of op at x (y: the output), f32; NULL with c->st set when op has none. */
static wgt_tensor *unary_derivative(ag_call *c, const op_grad_unary *u, const wgt_tensor *x, const wgt_tensor *y)
{
    const double ln2 = 0.69314718055994530942, pi = 3.14159265358979323846;
    const wgt_unary_params *p = &u->p;
    switch (u->op) {
    case WGT_UNARY_NEG: return ag_scalar(c, -1);
    case WGT_UNARY_ABS: return ag_un(c, WGT_UNARY_SIGN, x);
    case WGT_UNARY_SIGN: case WGT_UNARY_FLOOR: case WGT_UNARY_CEIL: case WGT_UNARY_ROUND: case WGT_UNARY_TRUNC:
        return ag_scalar(c, 0); /* piecewise constant: PyTorch's zero gradient */
    case WGT_UNARY_FRAC: return ag_scalar(c, 1);
    case WGT_UNARY_EXP: return ag_f32(c, y);
    case WGT_UNARY_EXP2: return ag_muls(c, y, ln2);
    case WGT_UNARY_EXPM1: return ag_adds(c, y, 1);
    case WGT_UNARY_LOG: return ag_un(c, WGT_UNARY_RECIPROCAL, x);
    case WGT_UNARY_LOG2: return ag_un(c, WGT_UNARY_RECIPROCAL, ag_muls(c, x, ln2));
    case WGT_UNARY_LOG1P: return ag_un(c, WGT_UNARY_RECIPROCAL, ag_adds(c, x, 1));
    case WGT_UNARY_SQRT: return ag_div(c, ag_scalar(c, 0.5), y);
    case WGT_UNARY_RSQRT: return ag_muls(c, ag_mul(c, y, ag_un(c, WGT_UNARY_SQUARE, y)), -0.5);
    case WGT_UNARY_RECIPROCAL: return ag_muls(c, ag_un(c, WGT_UNARY_SQUARE, y), -1);
    case WGT_UNARY_SQUARE: return ag_muls(c, x, 2);
    case WGT_UNARY_SIN: return ag_un(c, WGT_UNARY_COS, x);
    case WGT_UNARY_COS: return ag_muls(c, ag_un(c, WGT_UNARY_SIN, x), -1);
    case WGT_UNARY_TAN: return ag_adds(c, ag_un(c, WGT_UNARY_SQUARE, y), 1);
    case WGT_UNARY_ASIN: /* 1 / sqrt(1 - x^2) */
        return ag_un(c, WGT_UNARY_RSQRT, ag_sub(c, ag_scalar(c, 1), ag_un(c, WGT_UNARY_SQUARE, x)));
    case WGT_UNARY_ACOS:
        return ag_muls(c, ag_un(c, WGT_UNARY_RSQRT, ag_sub(c, ag_scalar(c, 1), ag_un(c, WGT_UNARY_SQUARE, x))), -1);
    case WGT_UNARY_ATAN: return ag_un(c, WGT_UNARY_RECIPROCAL, ag_adds(c, ag_un(c, WGT_UNARY_SQUARE, x), 1));
    case WGT_UNARY_SINH: return ag_un(c, WGT_UNARY_COSH, x);
    case WGT_UNARY_COSH: return ag_un(c, WGT_UNARY_SINH, x);
    case WGT_UNARY_TANH: return ag_sub(c, ag_scalar(c, 1), ag_un(c, WGT_UNARY_SQUARE, y));
    case WGT_UNARY_ASINH: return ag_un(c, WGT_UNARY_RSQRT, ag_adds(c, ag_un(c, WGT_UNARY_SQUARE, x), 1));
    case WGT_UNARY_ACOSH: return ag_un(c, WGT_UNARY_RSQRT, ag_adds(c, ag_un(c, WGT_UNARY_SQUARE, x), -1));
    case WGT_UNARY_ATANH:
        return ag_un(c, WGT_UNARY_RECIPROCAL, ag_sub(c, ag_scalar(c, 1), ag_un(c, WGT_UNARY_SQUARE, x)));
    case WGT_UNARY_ERF: case WGT_UNARY_ERFC: /* +-2/sqrt(pi) exp(-x^2) */
        return ag_muls(c, ag_un(c, WGT_UNARY_EXP, ag_muls(c, ag_un(c, WGT_UNARY_SQUARE, x), -1)),
                       (u->op == WGT_UNARY_ERF ? 2 : -2) / sqrt(pi));
    case WGT_UNARY_ERFINV: /* sqrt(pi)/2 exp(y^2) */
        return ag_muls(c, ag_un(c, WGT_UNARY_EXP, ag_un(c, WGT_UNARY_SQUARE, y)), sqrt(pi) / 2);
    case WGT_UNARY_LGAMMA: return ag_un(c, WGT_UNARY_DIGAMMA, x);
    case WGT_UNARY_SIGMOID: return ag_mul(c, y, ag_sub(c, ag_scalar(c, 1), y));
    case WGT_UNARY_RELU: return ag_bin(c, WGT_BINARY_GT, x, ag_scalar(c, 0));
    case WGT_UNARY_GELU: { /* Phi(x) + x phi(x) */
        wgt_tensor *cdf = ag_muls(c, ag_adds(c, ag_un(c, WGT_UNARY_ERF, ag_muls(c, x, 1 / sqrt(2.0))), 1), 0.5);
        wgt_tensor *pdf = ag_muls(c, ag_un(c, WGT_UNARY_EXP, ag_muls(c, ag_un(c, WGT_UNARY_SQUARE, x), -0.5)),
                                  1 / sqrt(2 * pi));
        return ag_add(c, cdf, ag_mul(c, x, pdf));
    }
    case WGT_UNARY_GELU_TANH: { /* t = tanh(k (x + a x^3)): 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 a x^2) */
        const double k = sqrt(2 / pi), a = 0.044715;
        wgt_tensor *x2 = ag_un(c, WGT_UNARY_SQUARE, x);
        wgt_tensor *t = ag_un(c, WGT_UNARY_TANH, ag_muls(c, ag_mul(c, x, ag_adds(c, ag_muls(c, x2, a), 1)), k));
        wgt_tensor *sech2 = ag_sub(c, ag_scalar(c, 1), ag_un(c, WGT_UNARY_SQUARE, t));
        wgt_tensor *inner = ag_muls(c, ag_adds(c, ag_muls(c, x2, 3 * a), 1), 0.5 * k);
        return ag_add(c, ag_muls(c, ag_adds(c, t, 1), 0.5), ag_mul(c, ag_mul(c, x, sech2), inner));
    }
    case WGT_UNARY_SILU: { /* s (1 + x (1 - s)) */
        wgt_tensor *s = ag_un(c, WGT_UNARY_SIGMOID, x);
        return ag_mul(c, s, ag_adds(c, ag_mul(c, x, ag_sub(c, ag_scalar(c, 1), s)), 1));
    }
    case WGT_UNARY_SOFTPLUS: { /* sigmoid(beta x), 1 past the threshold */
        wgt_tensor *bx = ag_muls(c, x, p->beta);
        return ag_where(c, ag_bin(c, WGT_BINARY_GT, bx, ag_scalar(c, p->hi)), ag_scalar(c, 1),
                        ag_un(c, WGT_UNARY_SIGMOID, bx));
    }
    case WGT_UNARY_MISH: { /* tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2), sp = softplus(x) */
        wgt_tensor *t = ag_un(c, WGT_UNARY_TANH, ag_un(c, WGT_UNARY_SOFTPLUS, x));
        wgt_tensor *sech2 = ag_sub(c, ag_scalar(c, 1), ag_un(c, WGT_UNARY_SQUARE, t));
        return ag_add(c, t, ag_mul(c, ag_mul(c, x, ag_un(c, WGT_UNARY_SIGMOID, x)), sech2));
    }
    case WGT_UNARY_ELU:
        return ag_where(c, ag_bin(c, WGT_BINARY_GT, x, ag_scalar(c, 0)), ag_scalar(c, 1),
                        ag_muls(c, ag_un(c, WGT_UNARY_EXP, x), p->alpha));
    case WGT_UNARY_LEAKY_RELU:
        return ag_where(c, ag_bin(c, WGT_BINARY_GT, x, ag_scalar(c, 0)), ag_scalar(c, 1), ag_scalar(c, p->alpha));
    case WGT_UNARY_HARDTANH: /* PyTorch: zero at the bounds */
        return ag_bin(c, WGT_BINARY_LOGICAL_AND, ag_bin(c, WGT_BINARY_GT, x, ag_scalar(c, p->lo)),
                      ag_bin(c, WGT_BINARY_LT, x, ag_scalar(c, p->hi)));
    case WGT_UNARY_CLAMP: /* PyTorch: passes at the bounds */
        return ag_bin(c, WGT_BINARY_LOGICAL_AND, ag_bin(c, WGT_BINARY_GE, x, ag_scalar(c, p->lo)),
                      ag_bin(c, WGT_BINARY_LE, x, ag_scalar(c, p->hi)));
    case WGT_UNARY_HARDSIGMOID: { /* alpha inside (0, 1) */
        wgt_tensor *z = ag_adds(c, ag_muls(c, x, p->alpha), p->beta);
        return ag_muls(c, ag_bin(c, WGT_BINARY_LOGICAL_AND, ag_bin(c, WGT_BINARY_GT, z, ag_scalar(c, 0)),
                                 ag_bin(c, WGT_BINARY_LT, z, ag_scalar(c, 1))), p->alpha);
    }
    case WGT_UNARY_HARDSWISH: /* 0 below -3, x/3 + 1/2 up to 3, 1 above (PyTorch) */
        return ag_where(c, ag_bin(c, WGT_BINARY_LT, x, ag_scalar(c, -3)), ag_scalar(c, 0),
                        ag_where(c, ag_bin(c, WGT_BINARY_LE, x, ag_scalar(c, 3)),
                                 ag_adds(c, ag_muls(c, x, 1.0 / 3), 0.5), ag_scalar(c, 1)));
    case WGT_UNARY_DIGAMMA: return trigamma(c, x);
    default:
        c->st = no_gradient(c, wgt_unary_op_name(u->op), "its output is boolean or integer");
        return NULL;
    }
}

wgt_status ag_grad_unary(ag_call *c)
{
    const op_grad_unary *u = c->params;
    wgt_tensor *x = c->in[0] ? ag_f32(c, c->in[0]) : NULL, *y = c->out ? ag_f32(c, c->out) : NULL, *r = NULL;
    if (!c->st && op_act_grad_ok(u->op, x, c->g)) { /* WGT_ACT_GRAD=fused (the default): g f'(x) in one pass */
        ag_set(c, 0, ag_sum_to(c, ag_keep(c, r, op_act_grad(u->op, x, c->g, &r)), &c->in_l[0]));
        return c->st;
    }
    wgt_tensor *d = unary_derivative(c, u, x, y);
    ag_set(c, 0, ag_sum_to(c, ag_mul(c, c->g, d), &c->in_l[0]));
    return c->st;
}

uint32_t ag_saves_binary(const void *params)
{
    wgt_binary_op op = *(const wgt_binary_op *)params;
    return op == WGT_BINARY_ADD || op == WGT_BINARY_SUB ? 0 : op == WGT_BINARY_POW ? 3 | AG_SAVE_OUT : 3;
}

wgt_status ag_grad_binary(ag_call *c)
{
    wgt_binary_op op = *(const wgt_binary_op *)c->params;
    const wgt_tensor *g = c->g;
    wgt_tensor *a = c->in[0] ? ag_f32(c, c->in[0]) : NULL, *b = c->in[1] ? ag_f32(c, c->in[1]) : NULL;
    wgt_tensor *ga = NULL, *gb = NULL;
    switch (op) {
    case WGT_BINARY_ADD: ga = (wgt_tensor *)g, gb = (wgt_tensor *)g; break;
    case WGT_BINARY_SUB: ga = (wgt_tensor *)g, gb = c->need[1] ? ag_muls(c, g, -1) : NULL; break;
    case WGT_BINARY_MUL:
        ga = c->need[0] ? ag_mul(c, g, b) : NULL;
        gb = c->need[1] ? ag_mul(c, g, a) : NULL;
        break;
    case WGT_BINARY_DIV:
        ga = c->need[0] ? ag_div(c, g, b) : NULL;
        gb = c->need[1] ? ag_muls(c, ag_div(c, ag_mul(c, g, a), ag_un(c, WGT_UNARY_SQUARE, b)), -1) : NULL;
        break;
    case WGT_BINARY_POW: { /* a^b: b a^(b-1); y log(a), 0 where a == 0 (PyTorch) */
        wgt_tensor *y = ag_f32(c, c->out);
        if (c->need[0])
            ga = ag_mul(c, g, ag_mul(c, b, ag_bin(c, WGT_BINARY_POW, a, ag_adds(c, b, -1))));
        if (c->need[1])
            gb = ag_where(c, ag_bin(c, WGT_BINARY_EQ, a, ag_scalar(c, 0)), ag_scalar(c, 0),
                          ag_mul(c, g, ag_mul(c, y, ag_un(c, WGT_UNARY_LOG, a))));
        break;
    }
    case WGT_BINARY_MAXIMUM: case WGT_BINARY_MINIMUM: { /* ties split the gradient in halves (PyTorch) */
        wgt_tensor *wa = ag_add(c, ag_cast(c, ag_bin(c, op == WGT_BINARY_MAXIMUM ? WGT_BINARY_GT : WGT_BINARY_LT, a, b),
                                           WGT_F32),
                                ag_muls(c, ag_cast(c, ag_bin(c, WGT_BINARY_EQ, a, b), WGT_F32), 0.5));
        ga = ag_mul(c, g, wa);
        gb = ag_mul(c, g, ag_sub(c, ag_scalar(c, 1), wa));
        break;
    }
    case WGT_BINARY_ATAN2: { /* d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2) */
        wgt_tensor *r2 = ag_add(c, ag_un(c, WGT_UNARY_SQUARE, a), ag_un(c, WGT_UNARY_SQUARE, b));
        ga = ag_div(c, ag_mul(c, g, b), r2);
        gb = ag_muls(c, ag_div(c, ag_mul(c, g, a), r2), -1);
        break;
    }
    case WGT_BINARY_FMOD: case WGT_BINARY_REMAINDER: /* a - q b: the quotient q is piecewise constant */
        ga = (wgt_tensor *)g;
        gb = c->need[1] ? ag_muls(c, ag_mul(c, g, ag_un(c, op == WGT_BINARY_FMOD ? WGT_UNARY_TRUNC : WGT_UNARY_FLOOR,
                                                         ag_div(c, a, b))), -1)
                        : NULL;
        break;
    default:
        return no_gradient(c, wgt_binary_op_name(op), "its output is boolean, integer or piecewise constant");
    }
    if (c->need[0]) ag_set(c, 0, ag_sum_to(c, ga, &c->in_l[0]));
    if (c->need[1]) ag_set(c, 1, ag_sum_to(c, gb, &c->in_l[1]));
    return c->st;
}

wgt_status ag_grad_where(ag_call *c)
{
    wgt_tensor *zero = ag_scalar(c, 0);
    if (c->need[0]) return no_gradient(c, "where's condition", "it is a boolean mask");
    if (c->need[1]) ag_set(c, 1, ag_sum_to(c, ag_where(c, c->in[0], c->g, zero), &c->in_l[1]));
    if (c->need[2]) ag_set(c, 2, ag_sum_to(c, ag_where(c, c->in[0], zero, c->g), &c->in_l[2]));
    return c->st;
}
