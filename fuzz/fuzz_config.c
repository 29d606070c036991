/* libFuzzer target: Hugging Face config.json and generation_config.json parsing (the JSON path). */
#include <stdint.h>

#include "wgt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wgt_hf_config c;
    if (wgt_hf_config_parse((const char *)data, size, "config.json", &c) == WGT_OK)
        wgt_hf_generation_config_parse((const char *)data, size, "generation_config.json", &c);
    return 0;
}
