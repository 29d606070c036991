/* The protobuf wire format, read by hand: SentencePiece .model files (src/tokenizer) and ONNX
 * files (testkit/onnx) need a few fields of a few messages, the format is four rules (varint,
 * 64-bit, length-delimited, 32-bit), and a hand reader bounds-checks every length, so a truncated
 * or corrupt file becomes a clear error instead of a dependency on libprotobuf and generated code.
 * Each call returns NULL when it read its value, else what is wrong (a static string the caller
 * puts in its message, with the file and field it was reading). */
#ifndef WGT_CORE_PROTOBUF_H
#define WGT_CORE_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct wgt_pb {
    const uint8_t *p, *end; /* the bytes not yet read of one message */
} wgt_pb;

enum { WGT_PB_VARINT = 0, WGT_PB_I64 = 1, WGT_PB_LEN = 2, WGT_PB_I32 = 5 };

/* One field: its number, wire type and value (varint, or fixed 32/64-bit zero-extended; for a
 * length-delimited field the length, its payload in sub). */
typedef struct wgt_pb_field {
    uint32_t number;
    int wire;
    uint64_t value;
    wgt_pb sub;
} wgt_pb_field;

const char *wgt_pb_varint(wgt_pb *b, uint64_t *v);
const char *wgt_pb_fixed(wgt_pb *b, int bytes, uint64_t *v); /* little-endian, 4 or 8 bytes */
const char *wgt_pb_bytes(wgt_pb *b, wgt_pb *payload);         /* a length, then that many bytes */
/* The key of the next field (number 1..2^29-1 and wire type). */
const char *wgt_pb_key(wgt_pb *b, uint32_t *number, int *wire);
/* The next field whole: 1 read, 0 at the end of b, -1 malformed (*problem says why; groups,
 * unused by these formats, are malformed). */
int wgt_pb_next(wgt_pb *b, wgt_pb_field *f, const char **problem);
/* A 32-bit field's bits as the float they hold. */
float wgt_pb_float(uint64_t v);

#endif
