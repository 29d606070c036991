/* libFuzzer target: the safetensors reader on arbitrary bytes, then every tensor's first and last
 * elements dequantised (reads at both ends of each tensor's span). */
#include <stdint.h>

#include "io/io.h"
#include "wgt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wgt_safetensors *st;
    if (wgt_safetensors_open_memory("fuzz.safetensors", data, size, &st)) return 0;
    for (int64_t i = 0; i < wgt_safetensors_metadata_count(st); i++)
        wgt_safetensors_metadata(st, wgt_safetensors_metadata_key(st, i));
    float buf[256];
    for (int64_t i = 0; i < wgt_safetensors_count(st); i++) {
        const wgt_st_tensor *t = wgt_safetensors_at(st, i);
        wgt_safetensors_find(st, t->name);
        int64_t n = t->n_elements < 256 ? t->n_elements : 256;
        uint64_t skip;
        wgt_dequantize(t->type, t->data, buf, n);
        if (!wgt_ftype_bytes(t->type, t->n_elements - n, &skip))
            wgt_dequantize(t->type, (const uint8_t *)t->data + skip, buf, n);
    }
    wgt_safetensors_free(st);
    return 0;
}
