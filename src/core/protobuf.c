/* The protobuf wire format (protobuf.h). */
#include "core/protobuf.h"

#include <string.h>

const char *wgt_pb_varint(wgt_pb *b, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end) return "varint runs past the end";
        uint8_t c = *b->p++;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return NULL;
        }
    }
    return "varint longer than 10 bytes";
}

const char *wgt_pb_fixed(wgt_pb *b, int bytes, uint64_t *v)
{
    if (b->end - b->p < bytes) return "fixed-size value runs past the end";
    uint64_t x = 0;
    for (int i = 0; i < bytes; i++) x |= (uint64_t)b->p[i] << (8 * i);
    b->p += bytes;
    *v = x;
    return NULL;
}

const char *wgt_pb_bytes(wgt_pb *b, wgt_pb *payload)
{
    uint64_t n;
    const char *why = wgt_pb_varint(b, &n);
    if (why) return why;
    if (n > (uint64_t)(b->end - b->p)) return "length runs past the end";
    payload->p = b->p;
    payload->end = b->p + n;
    b->p += n;
    return NULL;
}

const char *wgt_pb_key(wgt_pb *b, uint32_t *number, int *wire)
{
    uint64_t k;
    const char *why = wgt_pb_varint(b, &k);
    if (why) return why;
    if ((k >> 3) == 0 || (k >> 3) > 536870911) return "field number 0 or too large";
    *number = (uint32_t)(k >> 3);
    *wire = (int)(k & 7);
    return NULL;
}

int wgt_pb_next(wgt_pb *b, wgt_pb_field *f, const char **problem)
{
    if (b->p >= b->end) return 0;
    const char *why = wgt_pb_key(b, &f->number, &f->wire);
    if (!why) {
        switch (f->wire) {
        case WGT_PB_VARINT: why = wgt_pb_varint(b, &f->value); break;
        case WGT_PB_I64: why = wgt_pb_fixed(b, 8, &f->value); break;
        case WGT_PB_I32: why = wgt_pb_fixed(b, 4, &f->value); break;
        case WGT_PB_LEN:
            why = wgt_pb_bytes(b, &f->sub);
            if (!why) f->value = (uint64_t)(f->sub.end - f->sub.p);
            break;
        default: why = "unknown wire type (groups are not used here)";
        }
    }
    if (why) {
        if (problem) *problem = why;
        return -1;
    }
    return 1;
}

float wgt_pb_float(uint64_t v)
{
    uint32_t u = (uint32_t)v;
    float x;
    memcpy(&x, &u, 4);
    return x;
}
