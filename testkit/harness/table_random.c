/* Harness entries for the random ops (src/ops/random.c): each call makes a generator with a fixed
 * seed and offset, so the device and the CPU reference draw the same Philox stream and must agree
 * exactly (uniform, bernoulli, randint, randperm, multinomial, dropout, random_bits) or within the
 * f32 transcendental error of Box-Muller (normal). Creation ops take the case's shape from a
 * dummy input of the dtype to make; bernoulli, dropout and multinomial read their input in every
 * layout the harness makes (strided, broadcast, NaN/inf). Statistics live in test_gpu_random.c. */
#include <string.h>

#include "harness/harness.h"
#include "ops/ops.h"

/* The case's shape for a creation op: the main input's, with a dummy value domain. */
int setup_shape(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if ((c == HX_BIG || c == HX_ODD_LARGE) && dt != WGT_F32) return 0;
    in[0].dtype = dt;
    in[0].dom = op->dom;
    hx_case_shape(c, &in[0]);
    return 1;
}

/* x (or p): the case's shape and layouts. */
int setup_input(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if ((c == HX_BIG || c == HX_ODD_LARGE) && dt != WGT_F32) return 0;
    in[0].dtype = dt;
    in[0].dom = op->dom;
    hx_case_shape(c, &in[0]);
    return 1;
}

/* multinomial: weights [N, K] (or [K]), K odd and past one 256-chunk per category */
int setup_random_probs(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    in[0].dtype = dt;
    in[0].dom = op->dom;
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_SPECIAL: hx_case_shape(HX_CONTIGUOUS, &in[0]); break;
    case HX_BROADCAST: in[0].ndim = 2, in[0].shape[0] = 5, in[0].shape[1] = 1031; break;
    case HX_ODD1: case HX_ODD7: hx_case_shape(c, &in[0]); break;
    default: return 0;
    }
    return 1;
}

static wgt_generator *gen_for(int variant)
{
    wgt_generator *g = NULL;
    if (wgt_generator_create(0x5eed0000ull + (uint64_t)variant, &g)) return NULL;
    wgt_generator_set_offset(g, 4ull * 0xffffffffull); /* the block counter carries within the call */
    return g;
}

/* One call per row: the generator of the variant, the context, dtype and shape of the input (the
 * shape donor of the creation ops), then the op. */
#define RANDOM_CALL(name, body)                                                                   \
    wgt_status name(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)              \
    {                                                                                             \
        wgt_generator *g = gen_for(v);                                                            \
        if (!g) return WGT_ERR_OUT_OF_MEMORY;                                                     \
        wgt_context *ctx = wgt_tensor_context(in[0]);                                             \
        wgt_dtype dt = wgt_tensor_dtype(in[0]);                                                   \
        int nd = wgt_tensor_ndim(in[0]);                                                          \
        const int64_t *sh = wgt_tensor_shape(in[0]);                                              \
        (void)ctx, (void)dt, (void)nd, (void)sh;                                                  \
        wgt_status st;                                                                            \
        body;                                                                                     \
        wgt_generator_free(g);                                                                    \
        return st;                                                                                \
    }

RANDOM_CALL(call_rand_uniform, st = wgt_rand_uniform(ctx, g, dt, nd, sh, v ? -2.5 : 0, v ? 7 : 1, out))
RANDOM_CALL(call_rand_normal, st = wgt_rand_normal(ctx, g, dt, nd, sh, v ? -1 : 0, v ? 0.5 : 1, out))
RANDOM_CALL(call_bernoulli_scalar, st = wgt_bernoulli_scalar(ctx, g, dt, nd, sh, v ? 0.9 : 0.25, out))
RANDOM_CALL(call_randint, st = wgt_randint(ctx, g, dt == WGT_U8 || dt == WGT_U32 ? 0 : -100, v ? 100 : 7, dt, nd, sh, out))
RANDOM_CALL(call_random_bits, st = wgt_random_bits(ctx, g, nd, sh, out))
/* variant 0: the shuffle (n <= 2048) or, past it, Feistel */
RANDOM_CALL(call_randperm, int64_t n = v ? 4100 + wgt_tensor_numel(in[0]) % 1000 : 1 + wgt_tensor_numel(in[0]) % 2000;
            int64_t most = dt == WGT_I8 ? 128 : dt == WGT_U8 || dt == WGT_BF16 ? 256 : dt == WGT_F16 ? 2048 : n;
            st = wgt_randperm(ctx, g, n < most ? n : most, dt, out))
RANDOM_CALL(call_bernoulli, st = wgt_bernoulli(g, in[0], out))
RANDOM_CALL(call_dropout, st = wgt_dropout(g, in[0], v == 2 ? 1.0 : 0.3, 1, &out[0], v ? &out[1] : NULL))
RANDOM_CALL(call_multinomial, st = wgt_multinomial(g, in[0], v ? 300 : 17, v, WGT_I32, out))
