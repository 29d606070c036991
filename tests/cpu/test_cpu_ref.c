/* Spot checks of the CPU reference's tricky semantics against hand-computed values:
 * remainder/fmod signs, rounding half to even, i64 extremes, f16/bf16 rounding (once, from double),
 * broadcasting through stride-0 layouts, reductions over non-adjacent dims, empty tensors, scans,
 * indexing edge cases, rope frequencies and attention with GQA and a causal offset (vs a naive loop). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"

static int failures, checks;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        checks++;                                                         \
        if (!(cond)) {                                                    \
            failures++;                                                   \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                   \
            printf(__VA_ARGS__);                                          \
            printf("\n");                                                 \
        }                                                                 \
    } while (0)

static wgt_cpu_tensor t1(void *data, wgt_dtype dt, int64_t n)
{
    return wgt_cpu_tensor_make(data, dt, 1, &n);
}

static wgt_cpu_tensor tn(void *data, wgt_dtype dt, int nd, const int64_t *shape)
{
    return wgt_cpu_tensor_make(data, dt, nd, shape);
}

static void check_f32(const char *what, const float *got, const float *want, int n, double tol)
{
    for (int i = 0; i < n; i++) {
        int ok = (isnan(got[i]) && isnan(want[i])) || fabs((double)got[i] - want[i]) <= tol;
        ok = ok && (want[i] != 0 || signbit(got[i]) == signbit(want[i]) || tol > 0);
        CHECK(ok, "%s[%d] = %.9g, expected %.9g", what, i, got[i], want[i]);
    }
}

static void test_division_signs(void)
{
    float a[4] = {5, -5, 5, -5}, b[4] = {3, 3, -3, -3}, o[4];
    int32_t ia[4] = {5, -5, 5, -5}, ib[4] = {3, 3, -3, -3}, io[4];
    wgt_cpu_tensor A = t1(a, WGT_F32, 4), B = t1(b, WGT_F32, 4), O = t1(o, WGT_F32, 4);
    wgt_cpu_tensor IA = t1(ia, WGT_I32, 4), IB = t1(ib, WGT_I32, 4), IO = t1(io, WGT_I32, 4);
    static const struct { wgt_binary_op op; float want[4]; } cases[] = {
        {WGT_BINARY_REMAINDER, {2, 1, -1, -2}}, /* sign of the divisor */
        {WGT_BINARY_FMOD, {2, -2, 2, -2}},      /* sign of the dividend */
        {WGT_BINARY_DIV_FLOOR, {1, -2, -2, 1}},
        {WGT_BINARY_DIV_TRUNC, {1, -1, -1, 1}},
    };
    for (int c = 0; c < 4; c++) {
        CHECK(wgt_cpu_binary(cases[c].op, &A, &B, &O) == WGT_OK, "%s f32", wgt_binary_op_name(cases[c].op));
        check_f32(wgt_binary_op_name(cases[c].op), o, cases[c].want, 4, 0);
        CHECK(wgt_cpu_binary(cases[c].op, &IA, &IB, &IO) == WGT_OK, "%s i32", wgt_binary_op_name(cases[c].op));
        for (int i = 0; i < 4; i++)
            CHECK(io[i] == (int32_t)cases[c].want[i], "%s i32[%d] = %d", wgt_binary_op_name(cases[c].op), i, io[i]);
    }
    /* Integer division by zero gives 0 rather than trapping. */
    int32_t z[1] = {0}, x[1] = {7}, r[1] = {99};
    wgt_cpu_tensor Z = t1(z, WGT_I32, 1), X = t1(x, WGT_I32, 1), R = t1(r, WGT_I32, 1);
    CHECK(wgt_cpu_binary(WGT_BINARY_DIV, &X, &Z, &R) == WGT_OK && r[0] == 0, "7 / 0 (int) = %d", r[0]);
    /* Python's -0.0 rule: floor division of -0 keeps the sign of the quotient. */
    float m1[1] = {-1}, pz[1] = {0.5f}, fo[1];
    wgt_cpu_tensor M1 = t1(m1, WGT_F32, 1), PZ = t1(pz, WGT_F32, 1), FO = t1(fo, WGT_F32, 1);
    wgt_cpu_binary(WGT_BINARY_REMAINDER, &M1, &PZ, &FO);
    CHECK(fo[0] == 0, "-1 remainder 0.5 = %g", fo[0]);
}

static void test_round_half_even(void)
{
    float x[8] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4999f, 3.5f}, o[8];
    float want[8] = {0, 2, 2, -0.0f, -2, -2, 2, 4};
    wgt_cpu_tensor X = t1(x, WGT_F32, 8), O = t1(o, WGT_F32, 8);
    CHECK(wgt_cpu_unary(WGT_UNARY_ROUND, NULL, &X, &O) == WGT_OK, "round");
    check_f32("round", o, want, 8, 0);
    CHECK(signbit(o[3]), "round(-0.5) must be -0");
}

static void test_i64(void)
{
    int64_t a[4] = {INT64_MAX, INT64_MIN, INT64_MIN, (1LL << 53) + 1};
    int64_t b[4] = {1, -1, -1, 1LL << 53};
    int64_t o[4];
    wgt_cpu_tensor A = t1(a, WGT_I64, 4), B = t1(b, WGT_I64, 4), O = t1(o, WGT_I64, 4);
    wgt_cpu_binary(WGT_BINARY_ADD, &A, &B, &O);
    CHECK(o[0] == INT64_MIN, "INT64_MAX + 1 wraps: %lld", (long long)o[0]);
    wgt_cpu_binary(WGT_BINARY_DIV, &A, &B, &O);
    CHECK(o[1] == INT64_MIN, "INT64_MIN / -1 wraps: %lld", (long long)o[1]);
    wgt_cpu_binary(WGT_BINARY_REMAINDER, &A, &B, &O);
    CHECK(o[2] == 0, "INT64_MIN %% -1 = %lld", (long long)o[2]);
    uint8_t eq[4];
    wgt_cpu_tensor EQ = t1(eq, WGT_BOOL, 4);
    wgt_cpu_binary(WGT_BINARY_EQ, &A, &B, &EQ);
    CHECK(eq[3] == 0, "2^53 + 1 == 2^53 must be false in exact integers");
    int64_t m[2] = {INT64_MAX, INT64_MAX - 1}, mo[1];
    wgt_cpu_tensor M = t1(m, WGT_I64, 2), MO = tn(mo, WGT_I64, 0, NULL);
    int64_t idx[1];
    wgt_cpu_tensor IDX = tn(idx, WGT_I64, 0, NULL);
    wgt_cpu_reduce(WGT_REDUCE_AMIN, &M, 0, 0, 0, &MO, &IDX);
    CHECK(mo[0] == INT64_MAX - 1 && idx[0] == 1, "amin exact: %lld at %lld", (long long)mo[0], (long long)idx[0]);
    int64_t s[3] = {1LL << 62, 1LL << 62, -(1LL << 62)}, so[1];
    wgt_cpu_tensor S = t1(s, WGT_I64, 3), SO = tn(so, WGT_I64, 0, NULL);
    wgt_cpu_reduce(WGT_REDUCE_SUM, &S, 0, 0, 0, &SO, NULL);
    CHECK(so[0] == 1LL << 62, "sum wraps through and back: %lld", (long long)so[0]);
    int64_t ab[1] = {INT64_MIN}, abo[1];
    wgt_cpu_tensor AB = t1(ab, WGT_I64, 1), ABO = t1(abo, WGT_I64, 1);
    wgt_cpu_unary(WGT_UNARY_ABS, NULL, &AB, &ABO);
    CHECK(abo[0] == INT64_MIN, "abs(INT64_MIN) wraps like PyTorch");
    /* Casts: float -> int truncates toward zero, saturates, NaN -> 0; bool = x != 0. */
    float f[5] = {-3.7f, 3.7f, 1e20f, NAN, -1e20f};
    int64_t fi[5];
    uint8_t fb[5];
    wgt_cpu_tensor F = t1(f, WGT_F32, 5), FI = t1(fi, WGT_I64, 5), FB = t1(fb, WGT_BOOL, 5);
    wgt_cpu_cast(&F, &FI);
    CHECK(fi[0] == -3 && fi[1] == 3 && fi[2] == INT64_MAX && fi[3] == 0 && fi[4] == INT64_MIN,
          "f32 -> i64: %lld %lld %lld %lld %lld", (long long)fi[0], (long long)fi[1], (long long)fi[2],
          (long long)fi[3], (long long)fi[4]);
    wgt_cpu_cast(&F, &FB);
    CHECK(fb[0] == 1 && fb[3] == 1, "f32 -> bool: NaN is true");
    int32_t w[1] = {300};
    int8_t w8[1];
    wgt_cpu_tensor W = t1(w, WGT_I32, 1), W8 = t1(w8, WGT_I8, 1);
    wgt_cpu_cast(&W, &W8);
    CHECK(w8[0] == 44, "i32 300 -> i8 wraps to 44, got %d", w8[0]);
    /* Shifts past the width. */
    int32_t sa[3] = {1, -8, -8}, sb[3] = {32, 1, 40}, sr[3];
    wgt_cpu_tensor SA = t1(sa, WGT_I32, 3), SB = t1(sb, WGT_I32, 3), SR = t1(sr, WGT_I32, 3);
    wgt_cpu_binary(WGT_BINARY_SHIFT_LEFT, &SA, &SB, &SR);
    CHECK(sr[0] == 0, "1 << 32 (i32) = %d", sr[0]);
    wgt_cpu_binary(WGT_BINARY_SHIFT_RIGHT, &SA, &SB, &SR);
    CHECK(sr[1] == -4 && sr[2] == -1, "-8 >> 1 = %d, -8 >> 40 = %d", sr[1], sr[2]);
}

static void test_half_rounding(void)
{
    CHECK(wgt_cpu_f64_to_f16(1 + ldexp(1, -11)) == 0x3c00, "f16: tie rounds to even (down)");
    CHECK(wgt_cpu_f64_to_f16(1 + 3 * ldexp(1, -11)) == 0x3c02, "f16: tie rounds to even (up)");
    /* Through f32 this would round twice (to the tie, then to even): once from double goes up. */
    CHECK(wgt_cpu_f64_to_f16(1 + ldexp(1, -11) + ldexp(1, -40)) == 0x3c01, "f16: one rounding from double");
    CHECK(wgt_cpu_f64_to_f16(65519) == 0x7bff, "f16: 65519 -> 65504");
    CHECK(wgt_cpu_f64_to_f16(65520) == 0x7c00, "f16: 65520 -> inf");
    CHECK(wgt_cpu_f64_to_f16(ldexp(1, -24)) == 0x0001, "f16: smallest subnormal");
    CHECK(wgt_cpu_f64_to_f16(ldexp(1, -25)) == 0x0000, "f16: half the smallest subnormal ties to 0");
    CHECK(wgt_cpu_f64_to_f16(1.5 * ldexp(1, -25)) == 0x0001, "f16: 0.75 of a subnormal step rounds up");
    CHECK(wgt_cpu_f64_to_f16(-0.0) == 0x8000, "f16: -0");
    CHECK((wgt_cpu_f64_to_f16(NAN) & 0x7c00) == 0x7c00 && (wgt_cpu_f64_to_f16(NAN) & 0x3ff), "f16: NaN");
    CHECK(wgt_cpu_f16_to_f64(0x3555) == 0.333251953125, "f16 -> f64 exact");
    CHECK(wgt_cpu_f64_to_bf16(1 + ldexp(1, -8)) == 0x3f80, "bf16: tie to even (down)");
    CHECK(wgt_cpu_f64_to_bf16(1 + 3 * ldexp(1, -8)) == 0x3f82, "bf16: tie to even (up)");
    CHECK(wgt_cpu_f64_to_bf16(3.39e38) == 0x7f7f, "bf16: max finite");
    CHECK(wgt_cpu_f64_to_bf16(3.4e38) == 0x7f80, "bf16: overflow to inf");
    CHECK(wgt_cpu_f64_to_bf16(NAN) == 0x7fc0, "bf16: NaN");
    CHECK(wgt_cpu_bf16_to_f64(0x3f81) == 1.0078125, "bf16 -> f64 exact");
    /* Through a tensor: f32 input, f16 output. */
    float x[2] = {1.0f + 0x1p-11f, 2049.0f};
    uint16_t h[2];
    wgt_cpu_tensor X = t1(x, WGT_F32, 2), H = t1(h, WGT_F16, 2);
    wgt_cpu_cast(&X, &H);
    CHECK(h[0] == 0x3c00 && wgt_cpu_f16_to_f64(h[1]) == 2048, "f32 -> f16 cast rounds to even");
}

static void test_broadcast_strides(void)
{
    /* a: one row [4] presented as [3, 4] with stride 0 on dim 0; b: [3, 1]; out: transposed [3, 4]
     * view of a [4, 3] buffer. */
    float row[4] = {1, 2, 3, 4}, col[3] = {10, 20, 30}, buf[12];
    wgt_cpu_tensor A = {row, {WGT_F32, 2, {3, 4}, {0, 1}, 0}};
    int64_t bs[2] = {3, 1};
    wgt_cpu_tensor B = tn(col, WGT_F32, 2, bs);
    wgt_cpu_tensor O = {buf, {WGT_F32, 2, {3, 4}, {1, 3}, 0}};
    CHECK(wgt_cpu_binary(WGT_BINARY_ADD, &A, &B, &O) == WGT_OK, "broadcast add");
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            CHECK(buf[j * 3 + i] == row[j] + col[i], "out[%d][%d] = %g", i, j, buf[j * 3 + i]);
    /* Shapes that do not broadcast are a status with a message, not a crash. */
    float c5[5] = {0};
    wgt_cpu_tensor C = t1(c5, WGT_F32, 5);
    CHECK(wgt_cpu_binary(WGT_BINARY_ADD, &A, &C, &O) == WGT_ERR_SHAPE && strstr(wgt_errmsg(), "broadcast"),
          "non-broadcastable shapes: %s", wgt_errmsg());
}

static void test_reduce_dims(void)
{
    float x[24], o[3], ok[3], var[3];
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    int64_t xs[3] = {2, 3, 4}, os[1] = {3}, oks[3] = {1, 3, 1};
    wgt_cpu_tensor X = tn(x, WGT_F32, 3, xs), O = tn(o, WGT_F32, 1, os), OK = tn(ok, WGT_F32, 3, oks);
    uint32_t mask = 1u << 0 | 1u << 2; /* dims 0 and 2, not adjacent */
    CHECK(wgt_cpu_reduce(WGT_REDUCE_SUM, &X, mask, 0, 0, &O, NULL) == WGT_OK, "sum dims {0,2}");
    float want[3] = {60, 92, 124}; /* sum over i, k of 12i + 4j + k */
    check_f32("sum{0,2}", o, want, 3, 0);
    CHECK(wgt_cpu_reduce(WGT_REDUCE_SUM, &X, mask, 1, 0, &OK, NULL) == WGT_OK, "sum keepdim");
    check_f32("sum{0,2} keepdim", ok, want, 3, 0);
    CHECK(wgt_cpu_reduce(WGT_REDUCE_SUM, &X, mask, 1, 0, &O, NULL) == WGT_ERR_SHAPE, "keepdim shape is checked");
    int64_t am[3], amx[3];
    float mx[3];
    wgt_cpu_tensor AM = tn(am, WGT_I64, 1, os), MX = tn(mx, WGT_F32, 1, os), AMX = tn(amx, WGT_I64, 1, os);
    wgt_cpu_reduce(WGT_REDUCE_ARGMAX, &X, mask, 0, 0, &AM, NULL);
    CHECK(am[0] == 7 && am[2] == 7, "argmax over {0,2} is row-major index 7 (i=1, k=3): %lld", (long long)am[0]);
    wgt_cpu_reduce(WGT_REDUCE_AMAX, &X, mask, 0, 0, &MX, &AMX);
    CHECK(mx[1] == 19 && amx[1] == 7, "amax with index: %g at %lld", mx[1], (long long)amx[1]);
    wgt_cpu_tensor V = tn(var, WGT_F32, 1, os);
    wgt_cpu_reduce(WGT_REDUCE_VAR, &X, mask, 0, 1, &V, NULL);
    float wv[3] = {298.0f / 7, 298.0f / 7, 298.0f / 7};
    check_f32("var{0,2} unbiased", var, wv, 3, 1e-5);
    /* A transposed input (strides, no copy): reduce dim 1 of x^T [4, 6] viewed from x as [6, 4]. */
    float tsum[4];
    int64_t ts[1] = {4};
    wgt_cpu_tensor XT = {x, {WGT_F32, 2, {4, 6}, {1, 4}, 0}}, TS = tn(tsum, WGT_F32, 1, ts);
    wgt_cpu_reduce(WGT_REDUCE_SUM, &XT, 1u << 1, 0, 0, &TS, NULL);
    float wt[4] = {60, 66, 72, 78};
    check_f32("sum of a transposed view", tsum, wt, 4, 0);
    /* NaN: amax propagates, argmax points at the first NaN. */
    float n[4] = {1, NAN, 5, NAN}, nm[1];
    int64_t na[1];
    wgt_cpu_tensor N = t1(n, WGT_F32, 4), NM = tn(nm, WGT_F32, 0, NULL), NA = tn(na, WGT_I64, 0, NULL);
    wgt_cpu_reduce(WGT_REDUCE_AMAX, &N, 0, 0, 0, &NM, NULL);
    wgt_cpu_reduce(WGT_REDUCE_ARGMAX, &N, 0, 0, 0, &NA, NULL);
    CHECK(isnan(nm[0]) && na[0] == 1, "NaN max %g at %lld", nm[0], (long long)na[0]);
    float big[3] = {1000, 1000, -INFINITY}, lse[1];
    wgt_cpu_tensor BIG = t1(big, WGT_F32, 3), LSE = tn(lse, WGT_F32, 0, NULL);
    wgt_cpu_reduce(WGT_REDUCE_LOGSUMEXP, &BIG, 0, 0, 0, &LSE, NULL);
    CHECK(fabs(lse[0] - (1000 + log(2.0))) < 1e-3, "logsumexp without overflow: %g", lse[0]);
}

static void test_empty(void)
{
    float dummy[1] = {7}, o[2] = {-1, -1};
    int64_t es[2] = {2, 0}, os[1] = {2};
    wgt_cpu_tensor E = tn(dummy, WGT_F32, 2, es), O = tn(o, WGT_F32, 1, os);
    CHECK(wgt_cpu_reduce(WGT_REDUCE_SUM, &E, 1u << 1, 0, 0, &O, NULL) == WGT_OK && o[0] == 0 && o[1] == 0, "empty sum");
    wgt_cpu_reduce(WGT_REDUCE_PROD, &E, 1u << 1, 0, 0, &O, NULL);
    CHECK(o[0] == 1, "empty prod = %g", o[0]);
    wgt_cpu_reduce(WGT_REDUCE_MEAN, &E, 1u << 1, 0, 0, &O, NULL);
    CHECK(isnan(o[0]), "empty mean is NaN");
    CHECK(wgt_cpu_reduce(WGT_REDUCE_AMAX, &E, 1u << 1, 0, 0, &O, NULL) == WGT_ERR_SHAPE, "empty amax is an error");
    wgt_cpu_tensor E2 = tn(NULL, WGT_F32, 2, es);
    CHECK(wgt_cpu_unary(WGT_UNARY_EXP, NULL, &E2, &E2) == WGT_OK, "unary on an empty tensor (no data)");
    /* matmul with K = 0 gives zeros. */
    int64_t as[2] = {2, 0}, bs[2] = {0, 3}, ms[2] = {2, 3};
    float m[6] = {1, 1, 1, 1, 1, 1};
    wgt_cpu_tensor MA = tn(NULL, WGT_F32, 2, as), MB = tn(NULL, WGT_F32, 2, bs), MO = tn(m, WGT_F32, 2, ms);
    CHECK(wgt_cpu_matmul(&MA, &MB, &MO) == WGT_OK && m[0] == 0 && m[5] == 0, "matmul with K = 0");
    /* cat skips an empty input. */
    float c1[2] = {1, 2}, c3[3];
    wgt_cpu_tensor C1 = t1(c1, WGT_F32, 2), C0 = t1(NULL, WGT_F32, 0), C3 = t1(c3, WGT_F32, 2);
    const wgt_cpu_tensor *parts[2] = {&C0, &C1};
    CHECK(wgt_cpu_cat(parts, 2, 0, &C3) == WGT_OK && c3[1] == 2, "cat with an empty part");
}

static void test_matmul(void)
{
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {1, 0, -1}, o[2], s[1];
    int64_t as[2] = {2, 3};
    wgt_cpu_tensor A = tn(a, WGT_F32, 2, as), B = t1(b, WGT_F32, 3), O = t1(o, WGT_F32, 2);
    CHECK(wgt_cpu_matmul(&A, &B, &O) == WGT_OK && o[0] == -2 && o[1] == -2, "matrix @ vector");
    wgt_cpu_tensor A1 = t1(a, WGT_F32, 3), S = tn(s, WGT_F32, 0, NULL);
    CHECK(wgt_cpu_matmul(&A1, &B, &S) == WGT_OK && s[0] == -2, "vector @ vector is 0-d");
    /* Batch broadcasting [2, 1, 1, 3] @ [3, 3, 1] -> [2, 3, 1, 1], and a transposed operand. */
    float bb[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, ob[6];
    int64_t a4[4] = {2, 1, 1, 3}, b3[3] = {3, 3, 1}, o4[4] = {2, 3, 1, 1};
    wgt_cpu_tensor A4 = tn(a, WGT_F32, 4, a4), B3 = tn(bb, WGT_F32, 3, b3), O4 = tn(ob, WGT_F32, 4, o4);
    CHECK(wgt_cpu_matmul(&A4, &B3, &O4) == WGT_OK, "batched matmul: %s", wgt_errmsg());
    CHECK(ob[0] == 14 && ob[4] == 4 * 4 + 5 * 5 + 6 * 6, "batched matmul values %g %g", ob[0], ob[4]);
    float m[4];
    int64_t ms[2] = {2, 2};
    wgt_cpu_tensor AT = {a, {WGT_F32, 2, {2, 3}, {1, 2}, 0}}; /* [[1,3,5],[2,4,6]] = a viewed [3,2]^T */
    wgt_cpu_tensor BT = {a, {WGT_F32, 2, {3, 2}, {2, 1}, 0}}; /* [[1,2],[3,4],[5,6]] */
    wgt_cpu_tensor M = tn(m, WGT_F32, 2, ms);
    wgt_cpu_matmul(&AT, &BT, &M);
    CHECK(m[0] == 35 && m[1] == 44 && m[3] == 56, "strided operands: %g %g %g", m[0], m[1], m[3]);
    /* addmm with beta = 0 does not read NaN in self. */
    float nan_self[1] = {NAN};
    wgt_cpu_tensor NS = tn(nan_self, WGT_F32, 0, NULL);
    wgt_cpu_addmm(&NS, &AT, &BT, 0, 2, &M);
    CHECK(m[0] == 70, "addmm beta=0 ignores self: %g", m[0]);
}

static void test_scans_and_indexing(void)
{
    float x[4] = {1, 3, 3, 2}, v[4];
    int64_t ix[4];
    wgt_cpu_tensor X = t1(x, WGT_F32, 4), V = t1(v, WGT_F32, 4), IX = t1(ix, WGT_I64, 4);
    wgt_cpu_scan(WGT_SCAN_CUMMAX, &X, 0, 0, 0, &V, &IX);
    CHECK(v[3] == 3 && ix[0] == 0 && ix[1] == 1 && ix[2] == 2 && ix[3] == 2, "cummax ties take the later index");
    wgt_cpu_scan(WGT_SCAN_CUMSUM, &X, 0, 1, 1, &V, NULL);
    CHECK(v[0] == 8 && v[3] == 0, "exclusive reverse cumsum: %g %g", v[0], v[3]);
    /* gather with a negative index (ONNX), and an out-of-range one reported. */
    float g[3] = {10, 20, 30}, go[2];
    int64_t gi[2] = {-1, 0};
    wgt_cpu_tensor G = t1(g, WGT_F32, 3), GI = t1(gi, WGT_I64, 2), GO = t1(go, WGT_F32, 2);
    CHECK(wgt_cpu_gather(&G, 0, &GI, &GO) == WGT_OK && go[0] == 30, "gather -1");
    gi[0] = 3;
    CHECK(wgt_cpu_gather(&G, 0, &GI, &GO) == WGT_ERR_INVALID_ARGUMENT && strstr(wgt_errmsg(), "out of range"),
          "gather out of range: %s", wgt_errmsg());
    /* scatter amax, and index_put with accumulate over duplicate indices. */
    float self[3] = {5, 5, 5}, src[3] = {1, 9, 7}, so[3];
    int64_t si[3] = {0, 0, 2};
    wgt_cpu_tensor SELF = t1(self, WGT_F32, 3), SRC = t1(src, WGT_F32, 3), SI = t1(si, WGT_I64, 3), SO = t1(so, WGT_F32, 3);
    wgt_cpu_scatter(&SELF, 0, &SI, &SRC, WGT_SCATTER_AMAX, &SO);
    CHECK(so[0] == 9 && so[1] == 5 && so[2] == 7, "scatter amax: %g %g %g", so[0], so[1], so[2]);
    const wgt_cpu_tensor *idx[1] = {&SI};
    wgt_cpu_index_put(&SELF, idx, 1, &SRC, 1, &SO);
    CHECK(so[0] == 15 && so[2] == 12, "index_put accumulate: %g %g", so[0], so[2]);
    /* pad reflect and replicate. */
    float p[3] = {1, 2, 3}, po[7];
    int64_t pads[2] = {2, 2};
    wgt_cpu_tensor P = t1(p, WGT_F32, 3), PO = t1(po, WGT_F32, 7);
    wgt_cpu_pad(&P, WGT_PAD_REFLECT, pads, 0, &PO);
    float want_r[7] = {3, 2, 1, 2, 3, 2, 1};
    check_f32("pad reflect", po, want_r, 7, 0);
    wgt_cpu_pad(&P, WGT_PAD_REPLICATE, pads, 0, &PO);
    float want_e[7] = {1, 1, 1, 2, 3, 3, 3};
    check_f32("pad replicate", po, want_e, 7, 0);
    /* roll, one_hot with an out-of-range index, tril with a diagonal offset. */
    int64_t shift = 1;
    float ro[3];
    wgt_cpu_tensor RO = t1(ro, WGT_F32, 3);
    wgt_cpu_roll(&P, 1, &shift, NULL, &RO);
    CHECK(ro[0] == 3 && ro[1] == 1, "roll");
    int64_t oh[2] = {1, 5};
    float ohv[6];
    int64_t ohs[2] = {2, 3};
    wgt_cpu_tensor OH = t1(oh, WGT_I64, 2), OHV = tn(ohv, WGT_F32, 2, ohs);
    wgt_cpu_one_hot(&OH, 1, 0, 1, &OHV);
    CHECK(ohv[1] == 1 && ohv[3] == 0 && ohv[4] == 0 && ohv[5] == 0, "one_hot");
    float tr[9], tro[9];
    for (int i = 0; i < 9; i++) tr[i] = 1;
    int64_t trs[2] = {3, 3};
    wgt_cpu_tensor TR = tn(tr, WGT_F32, 2, trs), TRO = tn(tro, WGT_F32, 2, trs);
    wgt_cpu_tril(&TR, -1, &TRO);
    CHECK(tro[0] == 0 && tro[3] == 1 && tro[4] == 0 && tro[7] == 1, "tril k=-1");
    /* special functions */
    float sx[2] = {0.3f, 1.0f}, sy[2], sz[2];
    wgt_cpu_tensor SX = t1(sx, WGT_F32, 2), SY = t1(sy, WGT_F32, 2), SZ = t1(sz, WGT_F32, 2);
    wgt_cpu_unary(WGT_UNARY_ERF, NULL, &SX, &SY);
    wgt_cpu_unary(WGT_UNARY_ERFINV, NULL, &SY, &SZ);
    CHECK(fabs(sz[0] - 0.3) < 1e-6, "erfinv(erf(0.3)) = %.9g", sz[0]);
    wgt_cpu_unary(WGT_UNARY_DIGAMMA, NULL, &SX, &SY);
    CHECK(fabs(sy[1] + 0.5772156649) < 1e-6, "digamma(1) = %.9g", sy[1]);
}

static void test_rope(void)
{
    /* llama3 scaling: the highest frequency is kept, the lowest divided by factor. */
    wgt_rope_params p = {.theta = 500000, .scaling = WGT_ROPE_LLAMA3, .factor = 8, .low_freq_factor = 1,
                         .high_freq_factor = 4, .original_max_position = 8192};
    double inv[64], af;
    CHECK(wgt_cpu_rope_inv_freq(&p, 128, inv, &af) == WGT_OK, "llama3 inv_freq");
    CHECK(inv[0] == 1 && fabs(inv[63] / (pow(500000, -126.0 / 128) / 8) - 1) < 1e-6 && af == 1,
          "llama3: inv[0] %g, inv[63] %g", inv[0], inv[63]);
    wgt_rope_params y = {.theta = 10000, .scaling = WGT_ROPE_YARN, .factor = 4, .original_max_position = 4096,
                         .truncate = 1};
    CHECK(wgt_cpu_rope_inv_freq(&y, 64, inv, &af) == WGT_OK, "yarn inv_freq");
    CHECK(fabs(af - (0.1 * log(4) + 1)) < 1e-12 && inv[0] == 1 &&
          fabs(inv[31] / (pow(10000, -62.0 / 64) / 4) - 1) < 1e-6, "yarn: af %g inv[31] %g", af, inv[31]);
    /* Interleaved pairs on x equal half-split pairs on x with its features permuted. */
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, xp[8], oi[8], oh[8];
    for (int j = 0; j < 4; j++) xp[j] = x[2 * j], xp[j + 4] = x[2 * j + 1];
    int64_t xs[2] = {1, 8}, pos[1] = {5};
    wgt_rope_params d = {.theta = 10000};
    wgt_cpu_tensor X = tn(x, WGT_F32, 2, xs), XP = tn(xp, WGT_F32, 2, xs), P = t1(pos, WGT_I64, 1);
    wgt_cpu_tensor OI = tn(oi, WGT_F32, 2, xs), OH = tn(oh, WGT_F32, 2, xs);
    CHECK(wgt_cpu_rope(&X, &P, 8, 1, &d, &OI) == WGT_OK && wgt_cpu_rope(&XP, &P, 8, 0, &d, &OH) == WGT_OK, "rope");
    int same = 1;
    for (int j = 0; j < 4; j++) same &= oi[2 * j] == oh[j] && oi[2 * j + 1] == oh[j + 4];
    CHECK(same, "interleaved and half-split agree after the permutation");
    /* Position 5, pair 0 (inv_freq 1): angle 5. */
    CHECK(fabs(oi[0] - (1 * cos(5.0f) - 2 * sin(5.0f))) < 1e-6, "rope value %g", oi[0]);
}

static uint32_t rng = 12345;
static float frand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) / 16777216.0 * 2 - 1);
}

static void test_attention(void)
{
    enum { B = 2, HQ = 4, HKV = 2, LQ = 3, LK = 6, D = 5, OFF = 3 };
    static float q[B * HQ * LQ * D], k[B * HKV * LK * D], v[B * HKV * LK * D], o[B * HQ * LQ * D];
    static float mask[LQ * LK];
    for (size_t i = 0; i < sizeof q / 4; i++) q[i] = frand();
    for (size_t i = 0; i < sizeof k / 4; i++) k[i] = frand(), v[i] = frand();
    for (int i = 0; i < LQ * LK; i++) mask[i] = frand();
    int64_t qs[4] = {B, HQ, LQ, D}, ks[4] = {B, HKV, LK, D}, ms[2] = {LQ, LK};
    wgt_cpu_tensor Q = tn(q, WGT_F32, 4, qs), K = tn(k, WGT_F32, 4, ks), V = tn(v, WGT_F32, 4, ks);
    wgt_cpu_tensor O = tn(o, WGT_F32, 4, qs), M = tn(mask, WGT_F32, 2, ms);
    wgt_sdpa_params p = {0, 1, OFF};
    CHECK(wgt_cpu_sdpa(&Q, &K, &V, &M, &p, &O) == WGT_OK, "sdpa: %s", wgt_errmsg());
    /* Naive: repeat the kv heads, loop over keys 0 .. OFF + i. */
    double worst = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < LQ; i++) {
                int hk = h / (HQ / HKV);
                double s[LK], mx = -1e300, sum = 0;
                for (int j = 0; j <= OFF + i && j < LK; j++) {
                    double acc = 0;
                    for (int d = 0; d < D; d++)
                        acc += (double)q[((b * HQ + h) * LQ + i) * D + d] * k[((b * HKV + hk) * LK + j) * D + d];
                    s[j] = acc / sqrt((double)D) + mask[i * LK + j];
                    if (s[j] > mx) mx = s[j];
                }
                for (int j = 0; j <= OFF + i && j < LK; j++) sum += s[j] = exp(s[j] - mx);
                for (int d = 0; d < D; d++) {
                    double acc = 0;
                    for (int j = 0; j <= OFF + i && j < LK; j++) acc += s[j] * v[((b * HKV + hk) * LK + j) * D + d];
                    double err = fabs(acc / sum - o[((b * HQ + h) * LQ + i) * D + d]);
                    if (err > worst) worst = err;
                }
            }
    CHECK(worst < 1e-6, "sdpa vs naive loop: worst error %g", worst);
    /* A boolean mask that removes every key of a row gives zeros there. */
    static uint8_t none[LQ * LK];
    wgt_cpu_tensor NM = tn(none, WGT_BOOL, 2, ms);
    wgt_sdpa_params np = {0, 0, 0};
    wgt_cpu_sdpa(&Q, &K, &V, &NM, &np, &O);
    CHECK(o[0] == 0 && !isnan(o[0]), "fully masked row gives zeros");
}

static void test_more_ops(void)
{
    /* linear: x [2, 3] @ w [2, 3]^T + b */
    float x[6] = {1, 2, 3, 4, 5, 6}, w[6] = {1, 0, -1, 2, 1, 0}, b[2] = {10, 20}, o[6];
    int64_t s23[2] = {2, 3}, s22[2] = {2, 2};
    wgt_cpu_tensor X = tn(x, WGT_F32, 2, s23), W = tn(w, WGT_F32, 2, s23), Bv = t1(b, WGT_F32, 2);
    wgt_cpu_tensor O = tn(o, WGT_F32, 2, s22);
    CHECK(wgt_cpu_linear(&X, &W, &Bv, &O) == WGT_OK, "linear: %s", wgt_errmsg());
    float wl[4] = {8, 24, 8, 33};
    check_f32("linear", o, wl, 4, 0);
    /* baddbmm with beta and alpha; outer */
    float one[1] = {1}, b1[4] = {1, 2, 3, 4}, b2[4] = {5, 6, 7, 8}, bo[2];
    int64_t s121[3] = {2, 1, 2}, s211[3] = {2, 2, 1}, s2_11[3] = {2, 1, 1};
    wgt_cpu_tensor ONE = tn(one, WGT_F32, 0, NULL), B1 = tn(b1, WGT_F32, 3, s121), B2 = tn(b2, WGT_F32, 3, s211);
    wgt_cpu_tensor BO = tn(bo, WGT_F32, 3, s2_11);
    CHECK(wgt_cpu_baddbmm(&ONE, &B1, &B2, 2, 0.5, &BO) == WGT_OK, "baddbmm: %s", wgt_errmsg());
    float wb[2] = {10.5f, 28.5f};
    check_f32("baddbmm", bo, wb, 2, 0);
    float oa[2] = {1, 2}, ob[3] = {3, 4, 5}, oo[6];
    wgt_cpu_tensor OA = t1(oa, WGT_F32, 2), OB = t1(ob, WGT_F32, 3), OO = tn(oo, WGT_F32, 2, s23);
    wgt_cpu_outer(&OA, &OB, &OO);
    float wo[6] = {3, 4, 5, 6, 8, 10};
    check_f32("outer", oo, wo, 6, 0);
    /* lerp, addcmul, addcdiv */
    float st[2] = {0, 10}, en[2] = {10, 20}, wq[1] = {0.25f}, wone[1] = {1}, lo[2];
    wgt_cpu_tensor ST = t1(st, WGT_F32, 2), EN = t1(en, WGT_F32, 2), WQ = tn(wq, WGT_F32, 0, NULL);
    wgt_cpu_tensor WONE = tn(wone, WGT_F32, 0, NULL), LO = t1(lo, WGT_F32, 2);
    wgt_cpu_lerp(&ST, &EN, &WQ, &LO);
    float wlp[2] = {2.5f, 12.5f};
    check_f32("lerp", lo, wlp, 2, 0);
    wgt_cpu_lerp(&ST, &EN, &WONE, &LO);
    check_f32("lerp w=1", lo, en, 2, 0);
    float two[1] = {2}, three[1] = {3}, ac[1];
    wgt_cpu_tensor TWO = tn(two, WGT_F32, 0, NULL), THREE = tn(three, WGT_F32, 0, NULL), AC = tn(ac, WGT_F32, 0, NULL);
    wgt_cpu_addcmul(&ONE, &TWO, &THREE, 0.5, &AC);
    CHECK(ac[0] == 4, "addcmul %g", ac[0]);
    wgt_cpu_addcdiv(&ONE, &TWO, &THREE, 0.5, &AC);
    CHECK(ac[0] == (float)(1 + 0.5 * 2 / 3.0), "addcdiv %g", ac[0]);
    /* masked_fill, masked_select (mask broadcast along rows), where with an exact i64 */
    float mf[3] = {1, 2, 3}, mo[3];
    uint8_t mk[3] = {0, 1, 0}, mrow[2] = {1, 0};
    wgt_cpu_tensor MF = t1(mf, WGT_F32, 3), MK = t1(mk, WGT_BOOL, 3), MO = t1(mo, WGT_F32, 3);
    wgt_cpu_masked_fill(&MF, &MK, -1, &MO);
    float wmf[3] = {1, -1, 3};
    check_f32("masked_fill", mo, wmf, 3, 0);
    float ms[4] = {1, 2, 3, 4}, msel[4];
    int64_t cnt = 0;
    wgt_cpu_tensor MS = tn(ms, WGT_F32, 2, s22), MR = t1(mrow, WGT_BOOL, 2), MSEL = t1(msel, WGT_F32, 4);
    CHECK(wgt_cpu_masked_select(&MS, &MR, &MSEL, &cnt) == WGT_OK && cnt == 2 && msel[0] == 1 && msel[1] == 3,
          "masked_select: %lld [%g %g]", (long long)cnt, msel[0], msel[1]);
    int64_t wa[1] = {(1LL << 60) + 1}, wbv[2] = {7, 8}, wo2[2];
    uint8_t wc[2] = {1, 0};
    wgt_cpu_tensor WC = t1(wc, WGT_BOOL, 2), WA = tn(wa, WGT_I64, 0, NULL), WB = t1(wbv, WGT_I64, 2), WO = t1(wo2, WGT_I64, 2);
    wgt_cpu_where(&WC, &WA, &WB, &WO);
    CHECK(wo2[0] == (1LL << 60) + 1 && wo2[1] == 8, "where keeps i64 exact");
    /* embedding (and an id out of range), index_add, index_select, nonzero */
    float ew[6] = {0, 1, 2, 3, 4, 5}, eo[4];
    int64_t ids[2] = {2, 0}, s32[2] = {3, 2};
    wgt_cpu_tensor EW = tn(ew, WGT_F32, 2, s32), ID = t1(ids, WGT_I64, 2), EO = tn(eo, WGT_F32, 2, s22);
    wgt_cpu_embedding(&EW, &ID, &EO);
    float we[4] = {4, 5, 0, 1};
    check_f32("embedding", eo, we, 4, 0);
    ids[0] = 3;
    CHECK(wgt_cpu_embedding(&EW, &ID, &EO) == WGT_ERR_INVALID_ARGUMENT, "embedding id out of range");
    float ia[3] = {0, 0, 0}, isrc[3] = {1, 2, 3}, io[3];
    int64_t iidx[3] = {0, 2, 0};
    wgt_cpu_tensor IA = t1(ia, WGT_F32, 3), IS = t1(isrc, WGT_F32, 3), II = t1(iidx, WGT_I64, 3), IO = t1(io, WGT_F32, 3);
    wgt_cpu_index_add(&IA, 0, &II, &IS, 2, &IO);
    float wia[3] = {8, 0, 4};
    check_f32("index_add", io, wia, 3, 0);
    int64_t sel[2] = {2, 0};
    float so[4];
    wgt_cpu_tensor SEL = t1(sel, WGT_I64, 2), SO = tn(so, WGT_F32, 2, s22);
    wgt_cpu_index_select(&X, 1, &SEL, &SO);
    float wsel[4] = {3, 1, 6, 4};
    check_f32("index_select", so, wsel, 4, 0);
    float nz[4] = {0, 1, 2, 0};
    int64_t nzo[4], nzc;
    wgt_cpu_tensor NZ = tn(nz, WGT_F32, 2, s22), NZO = tn(nzo, WGT_I64, 2, s22);
    CHECK(wgt_cpu_nonzero(&NZ, &NZO, &nzc) == WGT_OK && nzc == 2 && nzo[0] == 0 && nzo[1] == 1 && nzo[2] == 1 &&
          nzo[3] == 0, "nonzero");
    /* stack, flip, repeat, linspace, eye, arange (exact i64) */
    float sa[2] = {1, 2}, sb[2] = {3, 4}, sto[4];
    wgt_cpu_tensor SA = t1(sa, WGT_F32, 2), SB = t1(sb, WGT_F32, 2), STO = tn(sto, WGT_F32, 2, s22);
    const wgt_cpu_tensor *pair[2] = {&SA, &SB};
    wgt_cpu_stack(pair, 2, 1, &STO);
    float wst[4] = {1, 3, 2, 4};
    check_f32("stack dim 1", sto, wst, 4, 0);
    float fo[4];
    wgt_cpu_tensor FO = tn(fo, WGT_F32, 2, s22);
    wgt_cpu_flip(&MS, 1u << 1, &FO);
    float wf[4] = {2, 1, 4, 3};
    check_f32("flip", fo, wf, 4, 0);
    float ro[8];
    int64_t s24[2] = {2, 4};
    wgt_cpu_tensor RO = tn(ro, WGT_F32, 2, s24);
    CHECK(wgt_cpu_repeat(&SA, &RO) == WGT_OK && ro[2] == 1 && ro[7] == 2, "repeat");
    float lin[5];
    wgt_cpu_tensor LIN = t1(lin, WGT_F32, 5);
    wgt_cpu_linspace(0, 1, &LIN);
    float wlin[5] = {0, 0.25f, 0.5f, 0.75f, 1};
    check_f32("linspace", lin, wlin, 5, 0);
    float ey[6];
    wgt_cpu_tensor EY = tn(ey, WGT_F32, 2, s23);
    wgt_cpu_eye(&EY);
    float wey[6] = {1, 0, 0, 0, 1, 0};
    check_f32("eye", ey, wey, 6, 0);
    int64_t ar[2];
    wgt_cpu_tensor AR = t1(ar, WGT_I64, 2);
    wgt_cpu_arange(1152921504606846976.0, 1, &AR);
    CHECK(ar[1] == (1LL << 60) + 1, "arange i64 exact");
    /* integer pow */
    int32_t pb[3] = {3, 2, -1}, pe[3] = {4, -1, -3}, po[3];
    wgt_cpu_tensor PB = t1(pb, WGT_I32, 3), PE = t1(pe, WGT_I32, 3), PO = t1(po, WGT_I32, 3);
    wgt_cpu_binary(WGT_BINARY_POW, &PB, &PE, &PO);
    CHECK(po[0] == 81 && po[1] == 0 && po[2] == -1, "int pow: %d %d %d", po[0], po[1], po[2]);
}

static void test_norms(void)
{
    float x[2] = {3, 4}, w[2] = {1, 2}, o[2];
    int64_t s12[2] = {1, 2};
    wgt_cpu_tensor X = tn(x, WGT_F32, 2, s12), W = t1(w, WGT_F32, 2), O = tn(o, WGT_F32, 2, s12);
    wgt_cpu_rms_norm(&X, 1, &W, 0, &O);
    float wr[2] = {(float)(3 / sqrt(12.5)), (float)(8 / sqrt(12.5))};
    check_f32("rms_norm", o, wr, 2, 1e-6);
    float g[4] = {1, 2, 3, 5}, go[4];
    int64_t s141[3] = {1, 4, 1};
    wgt_cpu_tensor G = tn(g, WGT_F32, 3, s141), GO = tn(go, WGT_F32, 3, s141);
    CHECK(wgt_cpu_group_norm(&G, 2, NULL, NULL, 0, &GO) == WGT_OK, "group_norm");
    float wg[4] = {-1, 1, -1, 1};
    check_f32("group_norm", go, wg, 4, 1e-6);
    float bx[2] = {1, 3}, bo[2], rm[1] = {0}, rv[1] = {1};
    int64_t s21[2] = {2, 1};
    wgt_cpu_tensor BX = tn(bx, WGT_F32, 2, s21), BO = tn(bo, WGT_F32, 2, s21), RM = t1(rm, WGT_F32, 1), RV = t1(rv, WGT_F32, 1);
    CHECK(wgt_cpu_batch_norm(&BX, &RM, &RV, NULL, NULL, 1, 0.1, 0, &BO) == WGT_OK, "batch_norm training");
    CHECK(bo[0] == -1 && bo[1] == 1 && fabsf(rm[0] - 0.2f) < 1e-7 && fabsf(rv[0] - 1.1f) < 1e-7,
          "batch_norm training: %g %g, running %g %g (PyTorch: unbiased running var)", bo[0], bo[1], rm[0], rv[0]);
    float sm[4] = {0, 0, (float)log(3.0), 0}, so[4];
    int64_t s22[2] = {2, 2};
    wgt_cpu_tensor SM = tn(sm, WGT_F32, 2, s22), SO = tn(so, WGT_F32, 2, s22);
    wgt_cpu_softmax(&SM, 0, &SO);
    float ws[4] = {0.25f, 0.5f, 0.75f, 0.5f};
    check_f32("softmax dim 0", so, ws, 4, 1e-7);
}

static void test_unary_values(void)
{
    static const struct { wgt_unary_op op; double x, want; } cases[] = {
        {WGT_UNARY_GELU, 1, 0.8413447460685429},      {WGT_UNARY_GELU_TANH, 1, 0.8411919906082768},
        {WGT_UNARY_SILU, 1, 0.7310585786300049},      {WGT_UNARY_MISH, 1, 0.8650983882673103},
        {WGT_UNARY_SOFTPLUS, 1, 1.3132616875182228},  {WGT_UNARY_SOFTPLUS, 30, 30},
        {WGT_UNARY_ERFC, 1, 0.15729920705028513},     {WGT_UNARY_EXPM1, 1e-10, 1.00000000005e-10},
        {WGT_UNARY_LGAMMA, 0.5, 0.5723649429247001},  {WGT_UNARY_HARDSWISH, 1, 2.0 / 3},
        {WGT_UNARY_HARDSIGMOID, 0, 0.5},              {WGT_UNARY_ELU, -1, -0.6321205588285577},
        {WGT_UNARY_FRAC, -1.5, -0.5},                 {WGT_UNARY_RSQRT, 4, 0.5},
        {WGT_UNARY_EXP2, 3, 8},                       {WGT_UNARY_LOG2, 8, 3},
        {WGT_UNARY_LEAKY_RELU, -2, -0.02},            {WGT_UNARY_HARDTANH, 3, 1},
        {WGT_UNARY_ISFINITE, INFINITY, 0},            {WGT_UNARY_SIGN, NAN, 0},  
        {WGT_UNARY_CLAMP, NAN, NAN},                  {WGT_UNARY_DIGAMMA, 0, -INFINITY},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        float x[1] = {(float)cases[i].x}, y[1];
        wgt_cpu_tensor X = t1(x, WGT_F32, 1), Y = t1(y, WGT_F32, 1);
        CHECK(wgt_cpu_unary(cases[i].op, NULL, &X, &Y) == WGT_OK, "%s", wgt_unary_op_name(cases[i].op));
        double want = (float)cases[i].want;
        int ok = isnan(want) ? isnan(y[0]) : y[0] == want || fabs(y[0] - want) <= 1e-7 * fabs(want);
        CHECK(ok, "%s(%g) = %.9g, expected %.9g", wgt_unary_op_name(cases[i].op), cases[i].x, y[0], want);
    }
    CHECK(!strcmp(wgt_unary_op_name(WGT_UNARY_BITWISE_NOT), "bitwise_not") &&
          !strcmp(wgt_binary_op_name(WGT_BINARY_SHIFT_RIGHT), "shift_right") &&
          !strcmp(wgt_reduce_op_name(WGT_REDUCE_ARGMIN), "argmin") && !strcmp(wgt_scan_op_name(WGT_SCAN_CUMMIN), "cummin") &&
          !strcmp(wgt_unary_op_name(WGT_UNARY_COUNT), "?"), "name tables");
}

/* Half types: inputs read exactly, math in double, one rounding into the output's type. */
static void test_half_ops(void)
{
    static const wgt_dtype types[2] = {WGT_F16, WGT_BF16};
    for (int t = 0; t < 2; t++) {
        wgt_dtype dt = types[t];
        uint16_t a[6], b[6], o[6];
        double av[6], bv[6];
        for (int i = 0; i < 6; i++) {
            double x = 0.37 * (i + 1) - 1.1, y = 1.3 - 0.21 * i;
            a[i] = dt == WGT_F16 ? wgt_cpu_f64_to_f16(x) : wgt_cpu_f64_to_bf16(x);
            b[i] = dt == WGT_F16 ? wgt_cpu_f64_to_f16(y) : wgt_cpu_f64_to_bf16(y);
            av[i] = dt == WGT_F16 ? wgt_cpu_f16_to_f64(a[i]) : wgt_cpu_bf16_to_f64(a[i]);
            bv[i] = dt == WGT_F16 ? wgt_cpu_f16_to_f64(b[i]) : wgt_cpu_bf16_to_f64(b[i]);
        }
        int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s22[2] = {2, 2};
        wgt_cpu_tensor A = t1(a, dt, 6), B = t1(b, dt, 6), O = t1(o, dt, 6);
        uint16_t want;
        wgt_cpu_unary(WGT_UNARY_EXP, NULL, &A, &O);
        for (int i = 0; i < 6; i++) {
            want = dt == WGT_F16 ? wgt_cpu_f64_to_f16(exp(av[i])) : wgt_cpu_f64_to_bf16(exp(av[i]));
            CHECK(o[i] == want, "%s exp[%d]: 0x%04x, expected 0x%04x", wgt_dtype_name(dt), i, o[i], want);
        }
        wgt_cpu_binary(WGT_BINARY_DIV, &A, &B, &O);
        for (int i = 0; i < 6; i++) {
            want = dt == WGT_F16 ? wgt_cpu_f64_to_f16(av[i] / bv[i]) : wgt_cpu_f64_to_bf16(av[i] / bv[i]);
            CHECK(o[i] == want, "%s div[%d]: 0x%04x, expected 0x%04x", wgt_dtype_name(dt), i, o[i], want);
        }
        wgt_cpu_tensor M1 = tn(a, dt, 2, s23), M2 = tn(b, dt, 2, s32), MO = tn(o, dt, 2, s22);
        wgt_cpu_matmul(&M1, &M2, &MO);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                double acc = 0;
                for (int k = 0; k < 3; k++) acc += av[i * 3 + k] * bv[k * 2 + j];
                want = dt == WGT_F16 ? wgt_cpu_f64_to_f16(acc) : wgt_cpu_f64_to_bf16(acc);
                CHECK(o[i * 2 + j] == want, "%s matmul[%d][%d]: 0x%04x, expected 0x%04x", wgt_dtype_name(dt), i, j,
                      o[i * 2 + j], want);
            }
        wgt_cpu_tensor S = tn(a, dt, 2, s23), SO = tn(o, dt, 2, s23);
        wgt_cpu_softmax(&S, 1, &SO);
        for (int i = 0; i < 2; i++) {
            double m = -INFINITY, sum = 0;
            for (int k = 0; k < 3; k++) m = fmax(m, av[i * 3 + k]);
            for (int k = 0; k < 3; k++) sum += exp(av[i * 3 + k] - m);
            for (int k = 0; k < 3; k++) {
                double y = exp(av[i * 3 + k] - m) / sum;
                want = dt == WGT_F16 ? wgt_cpu_f64_to_f16(y) : wgt_cpu_f64_to_bf16(y);
                CHECK(o[i * 3 + k] == want, "%s softmax[%d][%d]", wgt_dtype_name(dt), i, k);
            }
        }
    }
}

int main(void)
{
    test_division_signs();
    test_round_half_even();
    test_i64();
    test_half_rounding();
    test_broadcast_strides();
    test_reduce_dims();
    test_empty();
    test_matmul();
    test_scans_and_indexing();
    test_rope();
    test_attention();
    test_more_ops();
    test_norms();
    test_unary_values();
    test_half_ops();
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
