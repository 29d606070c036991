/* Elementwise semantics against PyTorch itself: fixtures/torch_ops.txt holds torch's results on
 * edge cases (signed zeros, infinities, NaN, ties, int64 extremes), written by
 * fixtures/make_torch_fixture.py where torch is installed. Floats: f32 inputs, torch computed in
 * float64, compared within one f32 ulp of torch's value rounded to f32 (the reference computes in
 * double and rounds once), zeros compared with their sign. Integers: int64, exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"

static int failures, compared;

static int find(const char *name, int unary)
{
    return unary ? wgt_unary_op_from_name(name) : wgt_binary_op_from_name(name);
}

static int is_bool_op(const char *name, int unary)
{
    static const char *u[] = {"isnan", "isinf", "isfinite", "logical_not"};
    static const char *b[] = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"};
    for (size_t i = 0; unary && i < 4; i++) if (!strcmp(name, u[i])) return 1;
    for (size_t i = 0; !unary && i < 9; i++) if (!strcmp(name, b[i])) return 1;
    return 0;
}

/* ours (f32) against torch's double result. */
static int same_f32(float ours, double want)
{
    float w = (float)want;
    if (isnan(w)) return isnan(ours);
    if (w == 0 && ours == 0) return signbit(w) == signbit(ours);
    if (isinf(w) || isinf(ours)) return w == ours;
    return fabsf(ours - w) <= fabsf(nextafterf(w, INFINITY) - w);
}

static void mismatch(const char *kind, const char *name, const char *args, const char *got, const char *want)
{
    if (++failures <= 60) printf("FAIL %s %s(%s) = %s, torch %s\n", kind, name, args, got, want);
}

int main(void)
{
    char path[4096];
    const char *root = getenv("WGT_ROOT");
    if (root) snprintf(path, sizeof path, "%s/tests/cpu/fixtures/torch_ops.txt", root);
    else {
        snprintf(path, sizeof path, "%s", __FILE__);
        char *slash = strrchr(path, '/');
        snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0), "fixtures/torch_ops.txt");
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("FAIL: cannot open %s\n", path);
        return 1;
    }
    char kind[4], name[64];
    int n, records = 0;
    while (fscanf(f, " %3s %63s %d", kind, name, &n) == 3) {
        int is_f = !strcmp(kind, "f"), unary = -1, op = -1, fails_before = failures;
        /* The record's arity: peek at the first line's field count. */
        long at = ftell(f);
        char line[512] = "";
        if (!fgets(line, sizeof line, f) || !fgets(line, sizeof line, f)) break;
        fseek(f, at, SEEK_SET);
        int fields = 0;
        for (char *p = strtok(line, " \t\n"); p; p = strtok(NULL, " \t\n")) fields++;
        unary = fields == 2;
        op = find(name, unary);
        if (op < 0 || n <= 0 || n > 100000) {
            printf("FAIL: unknown op or bad count in record %s %s\n", kind, name);
            return 1;
        }
        records++;
        int out_bool = is_bool_op(name, unary);
        for (int i = 0; i < n; i++) {
            char sa[64], sb[64] = "", sy[64];
            if ((unary ? fscanf(f, "%63s %63s", sa, sy) : fscanf(f, "%63s %63s %63s", sa, sb, sy)) != 3 - unary) {
                printf("FAIL: truncated record %s\n", name);
                return 1;
            }
            char args[160];
            snprintf(args, sizeof args, unary ? "%s" : "%s, %s", sa, sb);
            int64_t one = 1;
            compared++;
            if (is_f) {
                float a = strtof(sa, NULL), b = strtof(sb, NULL), y = 0;
                uint8_t yb = 0;
                double want = strtod(sy, NULL);
                wgt_cpu_tensor A = wgt_cpu_tensor_make(&a, WGT_F32, 1, &one), B = wgt_cpu_tensor_make(&b, WGT_F32, 1, &one);
                wgt_cpu_tensor Y = wgt_cpu_tensor_make(out_bool ? (void *)&yb : (void *)&y, out_bool ? WGT_BOOL : WGT_F32, 1, &one);
                wgt_unary_params p = wgt_unary_params_default((wgt_unary_op)op);
                if (unary && op == WGT_UNARY_CLAMP) p.lo = -0.5, p.hi = 2.0; /* as the generator */
                wgt_status st = unary ? wgt_cpu_unary((wgt_unary_op)op, &p, &A, &Y) : wgt_cpu_binary((wgt_binary_op)op, &A, &B, &Y);
                char got[64];
                if (out_bool) y = yb;
                snprintf(got, sizeof got, "%.9g", y);
                if (st || !same_f32(y, want)) mismatch("f32", name, args, st ? wgt_errmsg() : got, sy);
            } else {
                int64_t a = strtoll(sa, NULL, 10), b = strtoll(sb, NULL, 10), want = strtoll(sy, NULL, 10), y = 0;
                uint8_t yb = 0;
                wgt_cpu_tensor A = wgt_cpu_tensor_make(&a, WGT_I64, 1, &one), B = wgt_cpu_tensor_make(&b, WGT_I64, 1, &one);
                wgt_cpu_tensor Y = wgt_cpu_tensor_make(out_bool ? (void *)&yb : (void *)&y, out_bool ? WGT_BOOL : WGT_I64, 1, &one);
                wgt_status st = unary ? wgt_cpu_unary((wgt_unary_op)op, NULL, &A, &Y) : wgt_cpu_binary((wgt_binary_op)op, &A, &B, &Y);
                if (out_bool) y = yb;
                char got[64];
                snprintf(got, sizeof got, "%lld", (long long)y);
                if (st || y != want) mismatch("i64", name, args, st ? wgt_errmsg() : got, sy);
            }
        }
        if (failures > fails_before) printf("  %s %s: %d mismatches of %d\n", kind, name, failures - fails_before, n);
    }
    fclose(f);
    if (!records) {
        printf("FAIL: no records in %s\n", path);
        return 1;
    }
    printf("%d records, %d values compared with PyTorch, %d mismatches\n", records, compared, failures);
    return failures ? 1 : 0;
}
