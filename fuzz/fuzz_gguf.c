/* libFuzzer target: the GGUF reader on arbitrary bytes, then every accessor on what it accepted. */
#include <stdint.h>
#include <stdlib.h>

#include "io/io.h"
#include "wgt.h"

static void walk(const wgt_gguf_value *v, int depth)
{
    int64_t i64;
    uint64_t u64, len;
    double d;
    int b;
    const char *s;
    wgt_gguf_value_int(v, &i64);
    wgt_gguf_value_uint(v, &u64);
    wgt_gguf_value_float(v, &d);
    wgt_gguf_value_bool(v, &b);
    wgt_gguf_value_str(v, &s, &len);
    uint64_t n = wgt_gguf_array_len(v);
    wgt_gguf_array_data(v);
    for (uint64_t k = 0; k < n && k < 64; k++) {
        uint64_t at = k == 63 ? n - 1 : k;
        wgt_gguf_array_int(v, at, &i64);
        wgt_gguf_array_float(v, at, &d);
        if (wgt_gguf_array_str(v, at, &s, &len) == WGT_OK && len) (void)*(volatile const char *)(s + len - 1);
        const wgt_gguf_value *item = wgt_gguf_array_item(v, at);
        if (item && depth < 16) walk(item, depth + 1);
    }
    wgt_gguf_array_int(v, n, &i64); /* one past the end: must be refused */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wgt_gguf *g;
    if (wgt_gguf_open_memory("fuzz.gguf", data, size, &g)) return 0;
    for (int64_t i = 0; i < wgt_gguf_kv_count(g); i++) {
        wgt_gguf_find(g, wgt_gguf_kv_key(g, i));
        walk(wgt_gguf_kv_value(g, i), 0);
    }
    float buf[1024];
    for (int64_t i = 0; i < wgt_gguf_tensor_count(g); i++) {
        const wgt_gguf_tensor *t = wgt_gguf_tensor_at(g, i);
        wgt_gguf_tensor_find(g, t->name);
        uint32_t blk = wgt_ftype_block_elems(t->type);
        int64_t n = t->n_elements < 512 ? t->n_elements : 512;
        n -= n % blk;
        wgt_gguf_tensor_to_f32(t, 0, n, buf);                               /* the first elements */
        if (t->n_elements >= n) wgt_gguf_tensor_to_f32(t, t->n_elements - n, n, buf); /* the last */
    }
    wgt_gguf_free(g);
    return 0;
}
