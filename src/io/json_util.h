/* cJSON helpers shared by the safetensors reader, the HF config parser and the tokenizer.json reader. */
#ifndef WGT_IO_JSON_UTIL_H
#define WGT_IO_JSON_UTIL_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "wgt.h"

/* Most JSON values a header may hold: cJSON spends a node (about 64 bytes) on each, so the
 * count, estimated from the text before parsing, bounds the memory a hostile header can cost. */
#define WGT_JSON_MAX_VALUES (2u << 20)

/* Parse len bytes of JSON (no NUL needed). Refuses trailing garbage, more than
 * WGT_JSON_MAX_VALUES values and invalid JSON, with a message naming `name` and the byte offset;
 * running out of memory while parsing is WGT_ERR_OUT_OF_MEMORY, not invalid JSON. */
wgt_status wgt_json_parse(const char *text, uint64_t len, const char *name, cJSON **out);

/* A JSON number that is an integer in [0, 2^53]; 0 if it is not one. */
int wgt_json_uint(const cJSON *v, uint64_t *out);

/* Append s to buf as a JSON string literal (quotes included). */
wgt_status wgt_json_escape(char **buf, uint64_t *len, uint64_t *cap, const char *s);
wgt_status wgt_buf_append(char **buf, uint64_t *len, uint64_t *cap, const char *s, uint64_t n);

#endif
