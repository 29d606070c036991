/* SentencePiece .model files: a serialized ModelProto (sentencepiece_model.proto).
 * We decode the protobuf wire format by hand rather than depend on libprotobuf(-c) and generated
 * code: we need five scalar fields of three messages, the wire format is four rules (varint,
 * 64-bit, length-delimited, 32-bit), and a hand decoder can bound-check every length, so a
 * truncated or corrupt file becomes a clear WGT_ERR_FORMAT.
 *
 * Fields read (numbers from sentencepiece_model.proto):
 *   ModelProto      1 pieces (repeated SentencePiece), 2 trainer_spec, 3 normalizer_spec
 *   SentencePiece   1 piece (string), 2 score (float), 3 type (enum, 1 normal .. 6 byte)
 *   TrainerSpec     3 model_type (1 unigram, 2 bpe, 3 word, 4 char), 35 byte_fallback,
 *                   40 unk_id, 41 bos_id, 42 eos_id, 43 pad_id
 *   NormalizerSpec  1 name ("identity", "nmt_nfkc", "nfkc", ...), 3 add_dummy_prefix,
 *                   4 remove_extra_whitespaces, 5 escape_whitespaces */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

typedef struct pb { const uint8_t *p, *end; } pb;

static int pb_varint(pb *b, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end) return -1;
        uint8_t c = *b->p++;
        *v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) return 0;
    }
    return -1;
}

/* Next field: its number, wire type, and for length-delimited fields the sub-buffer; scalars
 * land in *v (varint / fixed). Returns 1 for a field, 0 at the end, -1 on a malformed buffer. */
static int pb_next(pb *b, uint32_t *field, uint32_t *wire, uint64_t *v, pb *sub)
{
    if (b->p >= b->end) return 0;
    uint64_t key;
    if (pb_varint(b, &key)) return -1;
    *field = (uint32_t)(key >> 3);
    *wire = (uint32_t)(key & 7);
    switch (*wire) {
    case 0: return pb_varint(b, v) ? -1 : 1;
    case 1:
        if (b->end - b->p < 8) return -1;
        memcpy(v, b->p, 8);
        b->p += 8;
        return 1;
    case 2:
        if (pb_varint(b, v) || *v > (uint64_t)(b->end - b->p)) return -1;
        sub->p = b->p;
        sub->end = b->p + *v;
        b->p += *v;
        return 1;
    case 5: {
        if (b->end - b->p < 4) return -1;
        uint32_t x;
        memcpy(&x, b->p, 4);
        *v = x;
        b->p += 4;
        return 1;
    }
    default: return -1;
    }
}

typedef struct spm_spec {
    int model_type, byte_fallback;
    int64_t unk_id, bos_id, eos_id, pad_id;
    char name[64];
    int add_dummy_prefix, remove_extra_ws, escape_ws;
} spm_spec;

static int parse_trainer(pb b, spm_spec *s)
{
    uint32_t f, w;
    uint64_t v;
    pb sub;
    int r;
    while ((r = pb_next(&b, &f, &w, &v, &sub)) == 1) {
        if (w != 0) continue;
        if (f == 3) s->model_type = (int)v;
        else if (f == 35) s->byte_fallback = v != 0;
        else if (f == 40) s->unk_id = (int32_t)v;
        else if (f == 41) s->bos_id = (int32_t)v;
        else if (f == 42) s->eos_id = (int32_t)v;
        else if (f == 43) s->pad_id = (int32_t)v;
    }
    return r;
}

static int parse_normalizer(pb b, spm_spec *s)
{
    uint32_t f, w;
    uint64_t v;
    pb sub;
    int r;
    while ((r = pb_next(&b, &f, &w, &v, &sub)) == 1) {
        if (f == 1 && w == 2) {
            size_t n = (size_t)(sub.end - sub.p) < sizeof s->name - 1 ? (size_t)(sub.end - sub.p) : sizeof s->name - 1;
            memcpy(s->name, sub.p, n);
            s->name[n] = 0;
        } else if (w == 0 && f == 3) s->add_dummy_prefix = v != 0;
        else if (w == 0 && f == 4) s->remove_extra_ws = v != 0;
        else if (w == 0 && f == 5) s->escape_ws = v != 0;
    }
    return r;
}

wgt_status tok_load_spm_model(const char *path, wgt_tokenizer **out)
{
    char *data;
    size_t len;
    wgt_status st = tok_read_file(path, &data, &len);
    if (st) return st;
    spm_spec spec = {.model_type = 1, .unk_id = 0, .bos_id = 1, .eos_id = 2, .pad_id = -1,
                     .name = "nmt_nfkc", .add_dummy_prefix = 1, .remove_extra_ws = 1, .escape_ws = 1};
    /* First pass: count the pieces and read the specs. */
    pb b = {(const uint8_t *)data, (const uint8_t *)data + len}, sub;
    uint32_t f, w;
    uint64_t v;
    int r;
    int32_t n = 0;
    while ((r = pb_next(&b, &f, &w, &v, &sub)) == 1) {
        if (w != 2) continue;
        if (f == 1) n++;
        else if (f == 2 && parse_trainer(sub, &spec) < 0) r = -1;
        else if (f == 3 && parse_normalizer(sub, &spec) < 0) r = -1;
        if (r < 0) break;
    }
    wgt_tokenizer *t = NULL;
    if (r < 0 || n == 0) {
        st = wgt_error(WGT_ERR_FORMAT, "%s: not a SentencePiece model (%s at byte %zu of %zu)", path,
                       r < 0 ? "malformed or truncated protobuf" : "no pieces", (size_t)(b.p - (const uint8_t *)data), len);
        goto done;
    }
    if (spec.model_type != 1 && spec.model_type != 2) {
        st = wgt_error(WGT_ERR_UNSUPPORTED, "%s: SentencePiece model type %d (unigram = 1 and BPE = 2 are supported)", path,
                       spec.model_type);
        goto done;
    }
    tok_norm norm;
    if (!strcmp(spec.name, "identity")) norm = NORM_NONE;
    else if (!strcmp(spec.name, "nmt_nfkc")) norm = NORM_NMT_NFKC;
    else if (!strcmp(spec.name, "nfkc")) norm = NORM_NFKC;
    else {
        st = wgt_error(WGT_ERR_UNSUPPORTED, "%s: SentencePiece normalizer '%s' (identity, nfkc and nmt_nfkc are supported)",
                       path, spec.name);
        goto done;
    }
    if (!(t = tok_new(spec.model_type == 2 ? TOK_SPM_BPE : TOK_SPM_UNIGRAM))) {
        st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
        goto done;
    }
    if ((st = tok_alloc_vocab(t, n))) goto done;
    t->norm = norm;
    t->add_dummy_prefix = spec.add_dummy_prefix;
    t->remove_extra_ws = spec.remove_extra_ws;
    t->escape_ws = spec.escape_ws;
    t->byte_fallback = spec.byte_fallback;
    /* Second pass: the pieces. */
    b = (pb){(const uint8_t *)data, (const uint8_t *)data + len};
    int32_t id = 0;
    while (!st && pb_next(&b, &f, &w, &v, &sub) == 1) {
        if (f != 1 || w != 2) continue;
        const char *piece = NULL;
        size_t plen = 0;
        float score = 0;
        int type = TT_NORMAL;
        uint32_t f2, w2;
        uint64_t v2;
        pb s2;
        while (pb_next(&sub, &f2, &w2, &v2, &s2) == 1) {
            if (f2 == 1 && w2 == 2) piece = (const char *)s2.p, plen = (size_t)(s2.end - s2.p);
            else if (f2 == 2 && w2 == 5) {
                uint32_t x = (uint32_t)v2;
                memcpy(&score, &x, 4);
            } else if (f2 == 3 && w2 == 0) type = (int)v2;
        }
        if (!piece) {
            st = wgt_error(WGT_ERR_FORMAT, "%s: piece %d has no text", path, id);
            break;
        }
        st = tok_set_token(t, id++, piece, plen, score, type);
    }
    if (st) goto done;
    if (spec.unk_id >= 0 && spec.unk_id < n) t->unk = (int32_t)spec.unk_id;
    if (spec.bos_id >= 0 && spec.bos_id < n) t->bos = (int32_t)spec.bos_id;
    if (spec.eos_id >= 0 && spec.eos_id < n) t->eos = (int32_t)spec.eos_id;
    if (spec.pad_id >= 0 && spec.pad_id < n) t->pad = (int32_t)spec.pad_id;
    t->add_bos = 1; /* as Llama 2 and Hugging Face's LlamaTokenizer do */
    /* Control and user-defined pieces are matched in text like Hugging Face's added tokens
     * (control ones only with WGT_TOKENIZE_PARSE_SPECIAL). */
    for (int32_t i = 0; i < n && !st; i++)
        if (t->type[i] == TT_CONTROL || t->type[i] == TT_USER_DEFINED || t->type[i] == TT_UNKNOWN)
            st = tok_add_added(t, t->text[i], t->text_len[i], i, t->type[i] != TT_USER_DEFINED, 0, 0, 0, 0);
    if (!st) st = tok_finish(t, path);
done:
    free(data);
    if (st) {
        wgt_tokenizer_free(t);
        return st;
    }
    *out = t;
    return WGT_OK;
}
