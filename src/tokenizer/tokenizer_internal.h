/* Internal structure of a wgt_tokenizer, shared by the loaders (hf_json.c, spm_model.c,
 * arrays in tokenizer.c), the models (bpe.c, spm.c) and the chat templates. */
#ifndef WGT_TOKENIZER_INTERNAL_H
#define WGT_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"
#include "wgt.h"

/* Token types, numbered as SentencePiece and GGUF number them. */
enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5, TT_BYTE = 6 };

typedef enum tok_kind { TOK_BYTE_BPE, TOK_SPM_BPE, TOK_SPM_UNIGRAM } tok_kind;
/* NORM_NMT_NFKC: SentencePiece's nmt_nfkc, NFKC plus its whitespace and control-character rules. */
typedef enum tok_norm { NORM_NONE, NORM_NFC, NORM_NFKC, NORM_NMT_NFKC } tok_norm;

/* ---- hash maps (maps.c) ---- */

/* bytes -> int32 value; keys are copied into the map's own arena. */
typedef struct strmap {
    struct strmap_slot { const char *key; uint32_t len, hash; int32_t value; } *slots;
    size_t cap, count;
    char **arenas; size_t n_arenas, arena_used, arena_cap;
} strmap;
int tok_strmap_put(strmap *m, const char *key, size_t len, int32_t value); /* 0, or -1 out of memory */
int32_t tok_strmap_get(const strmap *m, const char *key, size_t len);     /* -1 if absent */
void tok_strmap_free(strmap *m);

/* (left id, right id) -> (rank, merged id): the BPE merge table. */
typedef struct pairmap {
    struct pair_slot { uint64_t key; int32_t rank, merged; } *slots; /* key 0 = empty (ids + 1) */
    size_t cap, count;
} pairmap;
int tok_pairmap_put(pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t merged);
const struct pair_slot *tok_pairmap_get(const pairmap *m, int32_t a, int32_t b);
void tok_pairmap_free(pairmap *m);

/* Encoded words: word bytes -> ids. Bounded: cleared when it grows past its budget. */
typedef struct wordcache {
    strmap index;     /* word -> offset into ids (count stored first) */
    int32_t *ids; size_t n, cap;
} wordcache;
const int32_t *tok_wordcache_get(const wordcache *c, const char *w, size_t len, int32_t *n);
void tok_wordcache_put(wordcache *c, const char *w, size_t len, const int32_t *ids, int32_t n);
void tok_wordcache_free(wordcache *c);

/* ---- growable id vector ---- */
typedef struct idvec { int32_t *v; size_t n, cap; int oom; } idvec;
void tok_idvec_push(idvec *v, int32_t id);

/* ---- the tokenizer ---- */

typedef enum split_behavior { SPLIT_ISOLATED, SPLIT_REMOVED, SPLIT_MERGED_PREV, SPLIT_MERGED_NEXT } split_behavior;

typedef struct added_token {
    char *content; size_t len;
    int32_t id;
    int special, lstrip, rstrip, single_word, normalized;
} added_token;

struct wgt_tokenizer {
    tok_kind kind;
    int32_t n_vocab;          /* ids are 0..n_vocab-1 (including added tokens) */
    char **text;              /* (n_vocab) the vocabulary entry as written ("Ġthe", "▁the"); may be NULL for holes */
    uint32_t *text_len;
    char **piece;             /* (n_vocab) the bytes the token decodes to */
    uint32_t *piece_len;
    float *scores;            /* (n_vocab) SentencePiece scores, or NULL */
    uint8_t *type;            /* (n_vocab) TT_* */
    strmap vocab;             /* byte-level: piece bytes -> id; SentencePiece: text -> id (usable pieces) */
    strmap by_text;           /* vocabulary text -> id, for token_id() */

    /* byte-level BPE */
    pairmap merges;
    int32_t byte_id[256];     /* single-byte token of each byte (byte-level), or <0xXX> (SentencePiece) */
    pcre2_code *split_re[4];  /* pre-tokenizer regexes, applied in turn */
    split_behavior split_how[4];
    int n_split;
    pcre2_match_data *match;  /* reused by every encode (a tokenizer serves one thread at a time) */
    int byte_level_regex;     /* ByteLevel pre-tokenizer with use_regex: the GPT-2 regex after the splits */
    int add_prefix_space;     /* ByteLevel add_prefix_space */
    int ignore_merges;        /* a word found whole in the vocabulary is one token (Llama 3) */
    tok_norm norm;

    /* SentencePiece */
    int add_dummy_prefix, remove_extra_ws, escape_ws, byte_fallback;
    int prefix_every_segment; /* Hugging Face's Prepend normalizer: the prefix also after added tokens */
    int split_at_space;       /* no piece joins a non-space to a following U+2581: words encode alone */
    float min_score;
    int max_piece_chars;
    int unigram_sum_f64;      /* unigram path scores summed in double (Hugging Face tokenizers), else in
                                 float as SentencePiece does: the rounding decides ties ("00"+"0" or "0"+"00") */

    added_token *added; int n_added;
    int32_t added_first[256]; /* index into added (sorted by first byte, then longest first), -1 */

    int32_t bos, eos, unk, pad;
    int add_bos, add_eos;
    int32_t *eog; int n_eog;  /* end-of-generation ids */
    char *chat_template;

    wordcache cache;
};

/* Build helpers used by the loaders (tokenizer.c). */
wgt_status tok_alloc_vocab(wgt_tokenizer *t, int32_t n);
/* Set entry id: text as written in the vocabulary; the piece is derived per kind. */
wgt_status tok_set_token(wgt_tokenizer *t, int32_t id, const char *text, size_t len, float score, int type);
wgt_status tok_add_added(wgt_tokenizer *t, const char *content, size_t len, int32_t id, int special,
                         int lstrip, int rstrip, int single_word, int normalized);
wgt_status tok_add_merge(wgt_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen,
                         int32_t rank, const char *where);
wgt_status tok_set_split_regex(wgt_tokenizer *t, const char *pattern, split_behavior how, const char *where);
wgt_status tok_finish(wgt_tokenizer *t, const char *where);
int32_t tok_find_text(const wgt_tokenizer *t, const char *s);
wgt_tokenizer *tok_new(tok_kind kind);

/* The GPT-2 pre-tokenizer regexes. */
extern const char TOK_RE_GPT2[], TOK_RE_LLAMA3[], TOK_RE_QWEN2[];

/* GPT-2's byte <-> printable-code-point table. */
uint32_t tok_byte_to_cp(uint8_t b);
int tok_cp_to_byte(uint32_t cp); /* -1 if cp is not in the table */

/* Models: encode one pre-tokenized word (bytes) and append ids. */
void tok_bpe_encode_word(wgt_tokenizer *t, const char *w, size_t len, idvec *out);
void tok_spm_encode_text(wgt_tokenizer *t, const char *w, size_t len, idvec *out);

/* Loaders. */
wgt_status tok_load_hf_json(const char *path, const char *config_path, wgt_tokenizer **out);
wgt_status tok_load_gpt2_files(const char *encoder_json, const char *vocab_bpe, wgt_tokenizer **out);
wgt_status tok_load_spm_model(const char *path, wgt_tokenizer **out);
wgt_status tok_apply_config_json(wgt_tokenizer *t, const char *config_path);
wgt_status tok_load_gguf(const char *path, wgt_tokenizer **out);

/* Reading whole files. */
wgt_status tok_read_file(const char *path, char **data, size_t *len);

/* Chat template rendering (chat_template.c). */
wgt_status tok_render_template(const char *tmpl, const wgt_chat_message *msgs, size_t n, int add_gen,
                               const char *bos, const char *eos, const char *const *vars, size_t n_vars, char **out);

#endif
