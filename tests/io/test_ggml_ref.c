/* Against ggml itself: libggml-base.so of a prebuilt llama.cpp (npm @node-llama-cpp/linux-x64
 * 3.22.1, llama.cpp release v0.5.0, pinned in package-lock.json; installed here with npm ci when
 * missing) is loaded with dlopen, and
 *  - every block type's dequantize_row_* is compared with wgt_dequantize on random blocks
 *    (random bytes, with finite f16/f32 scales): bit-identical floats required;
 *  - quantize_row_{q8_0,q4_0,q4_K,q6_K}_ref are compared with wgt_quantize on Gaussian,
 *    uniform, sparse and constant data: identical bytes required (K-quants: counted, reported,
 *    and their dequantised error compared: no worse than ggml's);
 *  - ggml's f16/bf16 conversions against ours on every f16 and many f32 values.
 * WGT_GGML_LIB overrides the library path. */
#include <dlfcn.h>

#include "io/io_test.h"
#include "quant/half.h"

typedef void (*deq_fn)(const void *x, float *y, int64_t k);
typedef void (*q_fn)(const float *x, void *y, int64_t k);

static uint32_t rng = 99;
static uint32_t rnd(void) { return rng = rng * 1664525u + 1013904223u, rng >> 8; }
static float uni(void) { return (float)rnd() / 16777216.0f * 2 - 1; }
static float gauss(void)
{
    double u = ((double)rnd() + 1) / 16777217.0, v = (double)rnd() / 16777216.0;
    return (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
}
static void put16(uint8_t *p, float f) { uint16_t h = wgt_f32_to_f16(f); memcpy(p, &h, 2); }

int main(void)
{
    char path[2048];
    const char *env = getenv("WGT_GGML_LIB"), *root = getenv("WGT_ROOT");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/io", root ? root : ".");
    if (env) snprintf(path, sizeof path, "%s", env);
    else snprintf(path, sizeof path, "%s/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so", dir);
    if (!env && access(path, R_OK) != 0) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "cd '%s' && npm ci --no-audit --no-fund >/dev/null", dir);
        if (system(cmd)) fprintf(stderr, "npm ci in %s failed\n", dir);
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "FAIL: cannot load ggml from %s: %s\n", path, dlerror());
        return 1;
    }

    /* ---- dequantisation of every block type ---- */
    struct { wgt_ftype t; const char *sym; int d_off, d2_off, d_f32; } deq[] = {
        {WGT_FTYPE_Q4_0, "dequantize_row_q4_0", 0, -1, 0}, {WGT_FTYPE_Q4_1, "dequantize_row_q4_1", 0, 2, 0},
        {WGT_FTYPE_Q5_0, "dequantize_row_q5_0", 0, -1, 0}, {WGT_FTYPE_Q5_1, "dequantize_row_q5_1", 0, 2, 0},
        {WGT_FTYPE_Q8_0, "dequantize_row_q8_0", 0, -1, 0}, {WGT_FTYPE_Q2_K, "dequantize_row_q2_K", 80, 82, 0},
        {WGT_FTYPE_Q3_K, "dequantize_row_q3_K", 108, -1, 0}, {WGT_FTYPE_Q4_K, "dequantize_row_q4_K", 0, 2, 0},
        {WGT_FTYPE_Q5_K, "dequantize_row_q5_K", 0, 2, 0}, {WGT_FTYPE_Q6_K, "dequantize_row_q6_K", 208, -1, 0},
        {WGT_FTYPE_Q8_K, "dequantize_row_q8_K", 0, -1, 1},
    };
    enum { NB = 512 };
    for (size_t k = 0; k < sizeof deq / sizeof deq[0]; k++) {
        deq_fn f = (deq_fn)dlsym(lib, deq[k].sym);
        CHECK(f != NULL, "%s exported", deq[k].sym);
        if (!f) continue;
        uint32_t be = wgt_ftype_block_elems(deq[k].t), bb = wgt_ftype_block_bytes(deq[k].t);
        uint8_t *blocks = malloc((size_t)NB * bb);
        float *a = malloc(NB * be * sizeof *a), *b = malloc(NB * be * sizeof *b);
        for (size_t i = 0; i < (size_t)NB * bb; i++) blocks[i] = (uint8_t)rnd();
        for (int i = 0; i < NB; i++) { /* finite scales of varied magnitude and sign */
            uint8_t *blk = blocks + (size_t)i * bb;
            float d = ldexpf(uni(), (int)(rnd() % 16) - 12);
            if (deq[k].d_f32) memcpy(blk + deq[k].d_off, &d, 4);
            else put16(blk + deq[k].d_off, d);
            if (deq[k].d2_off >= 0) put16(blk + deq[k].d2_off, ldexpf(uni(), (int)(rnd() % 16) - 12));
        }
        f(blocks, a, NB * be);
        CHECK_OK(wgt_dequantize(deq[k].t, blocks, b, NB * be));
        int bad = 0;
        for (uint32_t i = 0; i < NB * be; i++) bad += memcmp(&a[i], &b[i], 4) != 0;
        CHECK(bad == 0, "%s: %d of %u values differ from ggml's", wgt_ftype_name(deq[k].t), bad, NB * be);
        printf("dequantise %-5s: %u values, %d differ from ggml\n", wgt_ftype_name(deq[k].t), NB * be, bad);
        free(blocks), free(a), free(b);
    }

    /* ---- quantisers ---- */
    struct { wgt_ftype t; const char *sym; } qs[] = {{WGT_FTYPE_Q8_0, "quantize_row_q8_0_ref"}, {WGT_FTYPE_Q4_0, "quantize_row_q4_0_ref"},
                                                     {WGT_FTYPE_Q4_K, "quantize_row_q4_K_ref"}, {WGT_FTYPE_Q6_K, "quantize_row_q6_K_ref"}};
    enum { N = 256 * 128 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    for (int dist = 0; dist < 7; dist++) {
        const char *names[] = {"gaussian", "uniform", "sparse", "constant", "outliers", "tiny", "positive"};
        for (int i = 0; i < N; i++)
            x[i] = dist == 0 ? gauss() : dist == 1 ? uni() * 3 : dist == 2 ? (rnd() % 8 ? 0.0f : gauss() * 10) : dist == 3 ? 0.75f
                 : dist == 4 ? gauss() * (rnd() % 97 ? 0.02f : 40.0f) : dist == 5 ? gauss() * 1e-6f : fabsf(gauss()) + 0.5f;
        for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++) {
            q_fn f = (q_fn)dlsym(lib, qs[k].sym);
            CHECK(f != NULL, "%s exported", qs[k].sym);
            if (!f) continue;
            uint64_t bytes;
            wgt_ftype_bytes(qs[k].t, N, &bytes);
            uint8_t *qa = calloc(1, bytes), *qb = calloc(1, bytes);
            f(x, qa, N);
            CHECK_OK(wgt_quantize(qs[k].t, x, qb, N));
            uint32_t bb = wgt_ftype_block_bytes(qs[k].t), nb = (uint32_t)(bytes / bb);
            int bad_blocks = 0;
            for (uint32_t i = 0; i < nb; i++) bad_blocks += memcmp(qa + (size_t)i * bb, qb + (size_t)i * bb, bb) != 0;
            double ea = 0, eb = 0;
            wgt_dequantize(qs[k].t, qa, y, N);
            for (int i = 0; i < N; i++) ea += (double)(y[i] - x[i]) * (y[i] - x[i]);
            wgt_dequantize(qs[k].t, qb, y, N);
            for (int i = 0; i < N; i++) eb += (double)(y[i] - x[i]) * (y[i] - x[i]);
            printf("quantise %-5s %-8s: %u blocks, %d differ from ggml's bytes; squared error ggml %.6g, ours %.6g\n",
                   wgt_ftype_name(qs[k].t), names[dist], nb, bad_blocks, ea, eb);
            CHECK(bad_blocks == 0, "%s on %s data: %d of %u blocks differ from ggml's reference quantiser", wgt_ftype_name(qs[k].t),
                  names[dist], bad_blocks, nb);
            free(qa), free(qb);
        }
    }
    free(x), free(y);

    /* ---- f16 / bf16 ---- */
    uint16_t (*to16)(float) = (uint16_t (*)(float))dlsym(lib, "ggml_fp32_to_fp16");
    float (*from16)(uint16_t) = (float (*)(uint16_t))dlsym(lib, "ggml_fp16_to_fp32");
    uint16_t (*tobf)(float) = (uint16_t (*)(float))dlsym(lib, "ggml_fp32_to_bf16");
    CHECK(to16 && from16 && tobf, "conversions exported");
    if (to16 && from16 && tobf) {
        int bad = 0;
        for (uint32_t h = 0; h < 65536; h++) {
            float a = from16((uint16_t)h), b = wgt_f16_to_f32((uint16_t)h);
            bad += memcmp(&a, &b, 4) != 0 && !(isnan(a) && isnan(b));
        }
        CHECK(bad == 0, "f16 -> f32: %d of 65536 differ", bad);
        int bad16 = 0, badbf = 0;
        for (int i = 0; i < 1000000; i++) {
            uint32_t u = rnd() << 8 ^ rnd();
            float f = wgt_bits_to_f32(u);
            if (isnan(f)) continue;
            bad16 += to16(f) != wgt_f32_to_f16(f);
            badbf += tobf(f) != wgt_f32_to_bf16(f);
        }
        CHECK(bad16 == 0 && badbf == 0, "f32 -> f16: %d, f32 -> bf16: %d of 1M random values differ", bad16, badbf);
        printf("conversions: f16->f32 all 65536, f32->f16 and f32->bf16 on 1M random values: %d, %d differ\n", bad16, badbf);
    }
    dlclose(lib);
    return finish("test_ggml_ref");
}
