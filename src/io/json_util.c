#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/json_util.h"

/* Upper bound of the values in a JSON text: every value but the first follows a ',' or ':' or
 * opens right after '[' — counting those outside strings bounds it. */
static uint64_t estimate_values(const char *s, uint64_t len)
{
    uint64_t n = 1;
    int in_str = 0;
    for (uint64_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == ',' || c == ':' || c == '[' || c == '{') {
            n++;
        }
    }
    return n;
}

wgt_status wgt_json_parse(const char *text, uint64_t len, const char *name, cJSON **out)
{
    *out = NULL;
    if (estimate_values(text, len) > WGT_JSON_MAX_VALUES)
        return wgt_error(WGT_ERR_LIMIT, "%s: JSON with more than %u values", name, WGT_JSON_MAX_VALUES);
    const char *end = NULL;
    /* cJSON returns NULL alike for a syntax error and for an allocation that failed; malloc's
     * ENOMEM tells them apart (nothing else the parser calls sets it: strtod sets ERANGE). A
     * successful malloc may leave ENOMEM behind too (glibc's brk failing before its mmap
     * fallback), so a second parse decides: a syntax error fails again without ENOMEM. */
    cJSON *j = NULL;
    int oom = 0;
    for (int attempt = 0; attempt < 2 && !j; attempt++) {
        errno = 0;
        j = cJSON_ParseWithLengthOpts(text, (size_t)len, &end, 0);
        oom = !j && errno == ENOMEM;
        if (!oom) break;
    }
    if (oom)
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory parsing %llu bytes of JSON", name,
                         (unsigned long long)len);
    if (!j) {
        const char *at = cJSON_GetErrorPtr();
        uint64_t off = at && at >= text && at <= text + len ? (uint64_t)(at - text) : 0;
        return wgt_error(WGT_ERR_FORMAT, "%s: invalid JSON near byte %llu", name, (unsigned long long)off);
    }
    for (const char *p = end; p && p < text + len; p++)
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t' && *p != 0) {
            cJSON_Delete(j);
            return wgt_error(WGT_ERR_FORMAT, "%s: unexpected bytes after the JSON value at byte %llu", name,
                             (unsigned long long)(p - text));
        }
    *out = j;
    return WGT_OK;
}

int wgt_json_uint(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!(d >= 0) || d > 9007199254740992.0 || d != floor(d)) return 0;
    *out = (uint64_t)d;
    return 1;
}

wgt_status wgt_buf_append(char **buf, uint64_t *len, uint64_t *cap, const char *s, uint64_t n)
{
    if (*len + n + 1 > *cap) {
        uint64_t c = *cap ? *cap : 1024;
        while (c < *len + n + 1) c *= 2;
        char *p = realloc(*buf, (size_t)c);
        if (!p) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "JSON buffer of %llu bytes", (unsigned long long)c);
        *buf = p;
        *cap = c;
    }
    memcpy(*buf + *len, s, (size_t)n);
    *len += n;
    (*buf)[*len] = 0;
    return WGT_OK;
}

wgt_status wgt_json_escape(char **buf, uint64_t *len, uint64_t *cap, const char *s)
{
    wgt_status st = wgt_buf_append(buf, len, cap, "\"", 1);
    for (; !st && *s; s++) {
        unsigned char c = (unsigned char)*s;
        char tmp[8];
        if (c == '"' || c == '\\') {
            tmp[0] = '\\';
            tmp[1] = (char)c;
            st = wgt_buf_append(buf, len, cap, tmp, 2);
        } else if (c < 0x20) {
            snprintf(tmp, sizeof tmp, "\\u%04x", c);
            st = wgt_buf_append(buf, len, cap, tmp, 6);
        } else {
            st = wgt_buf_append(buf, len, cap, (const char *)&c, 1);
        }
    }
    return st ? st : wgt_buf_append(buf, len, cap, "\"", 1);
}
