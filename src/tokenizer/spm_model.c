/* SentencePiece .model files: a serialized ModelProto (sentencepiece_model.proto).
 * The wire format is read by src/core/protobuf.h (we need a few scalar fields of three messages);
 * a truncated or corrupt file becomes a clear WGT_ERR_FORMAT.
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

#include "core/protobuf.h"
#include "tokenizer/tokenizer_internal.h"

typedef struct spm_spec {
    int model_type, byte_fallback;
    int64_t unk_id, bos_id, eos_id, pad_id;
    char name[64];
    int add_dummy_prefix, remove_extra_ws, escape_ws;
} spm_spec;

static int parse_trainer(wgt_pb b, spm_spec *s)
{
    wgt_pb_field f;
    int r;
    while ((r = wgt_pb_next(&b, &f, NULL)) == 1) {
        if (f.wire != WGT_PB_VARINT) continue;
        uint64_t v = f.value;
        if (f.number == 3) s->model_type = (int)v;
        else if (f.number == 35) s->byte_fallback = v != 0;
        else if (f.number == 40) s->unk_id = (int32_t)v;
        else if (f.number == 41) s->bos_id = (int32_t)v;
        else if (f.number == 42) s->eos_id = (int32_t)v;
        else if (f.number == 43) s->pad_id = (int32_t)v;
    }
    return r;
}

static int parse_normalizer(wgt_pb b, spm_spec *s)
{
    wgt_pb_field f;
    int r;
    while ((r = wgt_pb_next(&b, &f, NULL)) == 1) {
        if (f.number == 1 && f.wire == WGT_PB_LEN) {
            size_t n = (size_t)f.value < sizeof s->name - 1 ? (size_t)f.value : sizeof s->name - 1;
            memcpy(s->name, f.sub.p, n);
            s->name[n] = 0;
        } else if (f.wire == WGT_PB_VARINT && f.number == 3) s->add_dummy_prefix = f.value != 0;
        else if (f.wire == WGT_PB_VARINT && f.number == 4) s->remove_extra_ws = f.value != 0;
        else if (f.wire == WGT_PB_VARINT && f.number == 5) s->escape_ws = f.value != 0;
    }
    return r;
}

wgt_status tok_load_spm_model(const char *path, wgt_tokenizer **out)
{
    char *data;
    size_t len;
    wgt_status st = tok_read_file(path, &data, &len);
    if (st) return st;
    if (!len) {
        free(data);
        return wgt_error(WGT_ERR_FORMAT, "%s: empty file: not a SentencePiece model", path);
    }
    spm_spec spec = {.model_type = 1, .unk_id = 0, .bos_id = 1, .eos_id = 2, .pad_id = -1,
                     .name = "nmt_nfkc", .add_dummy_prefix = 1, .remove_extra_ws = 1, .escape_ws = 1};
    /* First pass: count the pieces and read the specs. */
    wgt_pb b = {(const uint8_t *)data, (const uint8_t *)data + len};
    wgt_pb_field f;
    int r;
    int32_t n = 0;
    const char *why = "malformed protobuf";
    while ((r = wgt_pb_next(&b, &f, &why)) == 1) {
        if (f.wire != WGT_PB_LEN) continue;
        if (f.number == 1) n++;
        else if (f.number == 2 && parse_trainer(f.sub, &spec) < 0) r = -1;
        else if (f.number == 3 && parse_normalizer(f.sub, &spec) < 0) r = -1;
        if (r < 0) break;
    }
    wgt_tokenizer *t = NULL;
    if (r < 0 || n == 0) {
        st = wgt_error(WGT_ERR_FORMAT, "%s: not a SentencePiece model (%s at byte %zu of %zu)", path,
                       r < 0 ? why : "no pieces", (size_t)(b.p - (const uint8_t *)data), len);
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
    b = (wgt_pb){(const uint8_t *)data, (const uint8_t *)data + len};
    int32_t id = 0;
    while (!st && wgt_pb_next(&b, &f, NULL) == 1) {
        if (f.number != 1 || f.wire != WGT_PB_LEN) continue;
        const char *piece = NULL;
        size_t plen = 0;
        float score = 0;
        int type = TT_NORMAL;
        wgt_pb_field g;
        while (wgt_pb_next(&f.sub, &g, NULL) == 1) {
            if (g.number == 1 && g.wire == WGT_PB_LEN) piece = (const char *)g.sub.p, plen = (size_t)g.value;
            else if (g.number == 2 && g.wire == WGT_PB_I32) score = wgt_pb_float(g.value);
            else if (g.number == 3 && g.wire == WGT_PB_VARINT) type = (int)g.value;
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
