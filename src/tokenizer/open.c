/* Opening a tokenizer: from a path (which kind of file or directory it is decides the loader)
 * or from plain arrays (GGUF tokenizer.ggml.* metadata). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tokenizer/tokenizer_internal.h"

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* tokenizer_config.json next to a tokenizer.json, if there is one. */
static char *sibling(const char *path, const char *name)
{
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) : 1;
    char *dir = malloc(dirlen + 1);
    if (!dir) return NULL;
    memcpy(dir, slash ? path : ".", dirlen);
    dir[dirlen] = 0;
    char *p = join(dir, name);
    free(dir);
    if (p && !file_exists(p)) {
        free(p);
        p = NULL;
    }
    return p;
}

static wgt_status open_dir(const char *dir, wgt_tokenizer **out)
{
    char *tj = join(dir, "tokenizer.json"), *cfg = join(dir, "tokenizer_config.json");
    char *model = join(dir, "tokenizer.model"), *enc = join(dir, "encoder.json"), *bpe = join(dir, "vocab.bpe");
    char *vj = join(dir, "vocab.json"), *mt = join(dir, "merges.txt");
    wgt_status st;
    if (!tj || !cfg || !model || !enc || !bpe || !vj || !mt) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    else if (file_exists(tj)) st = tok_load_hf_json(tj, file_exists(cfg) ? cfg : NULL, out);
    else if (file_exists(model)) {
        st = tok_load_spm_model(model, out);
        if (!st && file_exists(cfg)) {
            st = tok_apply_config_json(*out, cfg);
            if (!st) st = tok_finish(*out, cfg);
        }
    } else if (file_exists(enc) && file_exists(bpe)) st = tok_load_gpt2_files(enc, bpe, out);
    else if (file_exists(vj) && file_exists(mt)) st = tok_load_gpt2_files(vj, mt, out);
    else
        st = wgt_error(WGT_ERR_NOT_FOUND, "%s: no tokenizer here (looked for tokenizer.json, tokenizer.model, "
                                          "encoder.json + vocab.bpe, vocab.json + merges.txt)", dir);
    if (st && *out) {
        wgt_tokenizer_free(*out);
        *out = NULL;
    }
    free(tj), free(cfg), free(model), free(enc), free(bpe), free(vj), free(mt);
    return st;
}

wgt_status wgt_tokenizer_open(const char *path, wgt_tokenizer **out)
{
    if (!path || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_tokenizer_open: NULL argument");
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0) return wgt_error(WGT_ERR_NOT_FOUND, "%s: no such file or directory", path);
    if (S_ISDIR(sb.st_mode)) return open_dir(path, out);
    FILE *f = fopen(path, "rb");
    if (!f) return wgt_error(WGT_ERR_IO, "%s: cannot open", path);
    char head[4] = {0};
    size_t got = fread(head, 1, 4, f);
    fclose(f);
    if (got == 4 && !memcmp(head, "GGUF", 4)) return tok_load_gguf(path, out);
    size_t n = strlen(path);
    int json = (n >= 5 && !strcmp(path + n - 5, ".json")) || (got && head[0] == '{');
    if (json) {
        char *cfg = sibling(path, "tokenizer_config.json");
        wgt_status st = tok_load_hf_json(path, cfg, out);
        free(cfg);
        return st;
    }
    wgt_status st = tok_load_spm_model(path, out);
    if (st == WGT_ERR_FORMAT) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", wgt_errmsg());
        st = wgt_error(st, "%s (it is neither GGUF nor JSON either; a tokenizer is a tokenizer.json, a .model, a GGUF "
                           "file or a model directory)", msg);
    }
    return st;
}

/* ---- from arrays (GGUF metadata) ---- */

static const char *pre_regex(const char *pre)
{
    static const struct { const char *name, *re; } table[] = {
        {"default", TOK_RE_GPT2}, {"gpt-2", TOK_RE_GPT2}, {"gpt2", TOK_RE_GPT2},
        {"llama-bpe", TOK_RE_LLAMA3}, {"llama3", TOK_RE_LLAMA3}, {"smaug-bpe", TOK_RE_LLAMA3},
        {"qwen2", TOK_RE_QWEN2}, {"qwen3", TOK_RE_QWEN2}, {"deepseek-r1-qwen", TOK_RE_QWEN2},
    };
    if (!pre) return TOK_RE_GPT2;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(pre, table[i].name)) return table[i].re;
    return NULL;
}

wgt_status wgt_tokenizer_create(const wgt_tokenizer_arrays *a, wgt_tokenizer **out)
{
    if (!a || !out || !a->model || !a->tokens) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_tokenizer_create: NULL argument");
    *out = NULL;
    const char *where = "tokenizer.ggml";
    int gpt2 = !strcmp(a->model, "gpt2");
    if (!gpt2 && strcmp(a->model, "llama"))
        return wgt_error(WGT_ERR_UNSUPPORTED, "%s.model '%s' (\"llama\" and \"gpt2\" are supported)", where, a->model);
    if (a->n_tokens == 0 || a->n_tokens > 100000000) return wgt_error(WGT_ERR_FORMAT, "%s.tokens: %zu entries", where, a->n_tokens);
    const char *re = gpt2 ? pre_regex(a->pre) : NULL;
    if (gpt2 && !re)
        return wgt_error(WGT_ERR_UNSUPPORTED, "%s.pre '%s': unknown pre-tokenizer (default, gpt-2, llama-bpe, qwen2 are known)",
                         where, a->pre);
    wgt_tokenizer *t = tok_new(gpt2 ? TOK_BYTE_BPE : a->unigram ? TOK_SPM_UNIGRAM : TOK_SPM_BPE);
    if (!t) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    int32_t n = (int32_t)a->n_tokens;
    wgt_status st = tok_alloc_vocab(t, n);
    for (int32_t i = 0; i < n && !st; i++) {
        const char *s = a->tokens[i];
        if (!s) {
            st = wgt_error(WGT_ERR_FORMAT, "%s.tokens[%d] is NULL", where, i);
            break;
        }
        int type = a->token_types ? a->token_types[i] : TT_NORMAL;
        size_t len = a->token_lens ? a->token_lens[i] : strlen(s);
        /* A byte-level entry that is control / user-defined is an added token. */
        st = tok_set_token(t, i, s, len, a->scores ? a->scores[i] : 0, gpt2 && type != TT_NORMAL ? TT_NORMAL : type);
        if (!st && (type == TT_CONTROL || type == TT_USER_DEFINED || (type == TT_UNKNOWN && !gpt2)))
            st = tok_add_added(t, s, len, i, type != TT_USER_DEFINED, 0, 0, 0, 0);
    }
    for (size_t i = 0; gpt2 && i < a->n_merges && !st; i++) {
        const char *m = a->merges ? a->merges[i] : NULL;
        const char *sp = m ? strchr(m + (m[0] == ' '), ' ') : NULL;
        if (!sp) st = wgt_error(WGT_ERR_FORMAT, "%s.merges[%zu] is not \"a b\"", where, i);
        else st = tok_add_merge(t, m, (size_t)(sp - m), sp + 1, strlen(sp + 1), (int32_t)i, where);
    }
    if (!st && gpt2) st = tok_set_split_regex(t, re, SPLIT_ISOLATED, where);
    if (!st && gpt2 && a->pre && (!strcmp(a->pre, "llama-bpe") || !strcmp(a->pre, "llama3"))) t->ignore_merges = 1;
    if (!st && gpt2 && a->pre && !strncmp(a->pre, "qwen", 4)) t->norm = NORM_NFC;
    if (st) goto fail;
    /* a bos/eos id outside the vocabulary would be dropped from every encoding without a word
     * (unk and pad past the end are common in published files and stay optional) */
    if ((a->bos_id != -1 && (a->bos_id < 0 || a->bos_id >= n)) || (a->eos_id != -1 && (a->eos_id < 0 || a->eos_id >= n))) {
        int bad_bos = a->bos_id != -1 && (a->bos_id < 0 || a->bos_id >= n);
        int32_t id = bad_bos ? a->bos_id : a->eos_id;
        char shown[32];
        snprintf(shown, sizeof shown, "%d", id);
        st = wgt_error(WGT_ERR_FORMAT, "%s: the %s token id %s is outside the vocabulary of %d tokens", where,
                       bad_bos ? "bos" : "eos", id < 0 ? "(negative or past 2^31)" : shown, n);
        goto fail;
    }
    t->bos = a->bos_id >= 0 && a->bos_id < n ? a->bos_id : -1;
    t->eos = a->eos_id >= 0 && a->eos_id < n ? a->eos_id : -1;
    t->unk = a->unk_id >= 0 && a->unk_id < n ? a->unk_id : -1;
    t->pad = a->pad_id >= 0 && a->pad_id < n ? a->pad_id : -1;
    t->add_bos = a->add_bos >= 0 ? a->add_bos : !gpt2;
    t->add_eos = a->add_eos >= 0 ? a->add_eos : 0;
    if (!gpt2) {
        t->add_dummy_prefix = a->add_space_prefix >= 0 ? a->add_space_prefix : 1;
        for (int b = 0; b < 256; b++) t->byte_fallback |= t->byte_id[b] >= 0;
    }
    if (a->chat_template && !(t->chat_template = strdup(a->chat_template))) {
        st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
        goto fail;
    }
    if ((st = tok_finish(t, where))) goto fail;
    *out = t;
    return WGT_OK;
fail:
    wgt_tokenizer_free(t);
    return st;
}

wgt_status wgt_tokenizer_apply_chat_template(const wgt_tokenizer *t, const wgt_chat_message *msgs, size_t n_msgs,
                                             int add_generation_prompt, const char *template_override, char **text)
{
    return wgt_tokenizer_apply_chat_template_vars(t, msgs, n_msgs, add_generation_prompt, template_override, NULL, 0, text);
}

wgt_status wgt_tokenizer_apply_chat_template_vars(const wgt_tokenizer *t, const wgt_chat_message *msgs, size_t n_msgs,
                                                  int add_generation_prompt, const char *template_override,
                                                  const char *const *vars, size_t n_vars, char **text)
{
    if (!t || !text || (!msgs && n_msgs)) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_tokenizer_apply_chat_template: NULL argument");
    *text = NULL;
    /* The templates these families ship on the Hugging Face hub (tests/tokenizer/templates/). */
    static const struct { const char *name, *tmpl; } families[] = {
        {"chatml",
                   "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_"
                   "end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"},
        {"llama3",
                   "{%- set loop_messages = messages %}\n"
                   "{%- for message in loop_messages %}\n"
                   "    {%- set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['co"
                   "ntent'] | trim + '<|eot_id|>' %}\n"
                   "    {%- if loop.index0 == 0 %}\n"
                   "        {%- set content = bos_token + content %}\n"
                   "    {%- endif %}\n"
                   "    {{- content }}\n"
                   "{%- endfor %}\n"
                   "{%- if add_generation_prompt %}\n"
                   "    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n"
                   "{%- endif %}"},
        {"llama2",
                   "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message "
                   "= messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false"
                   " %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % "
                   "2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') "
                   "}}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + sys"
                   "tem_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] "
                   "%}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST"
                   "]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif"
                   " %}{% endfor %}"},
        {"mistral",
                   "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 =="
                   " 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{%"
                   " endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif "
                   "message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('On"
                   "ly user and assistant roles are supported!') }}{% endif %}{% endfor %}"},
        {"gemma",
                   "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported"
                   "') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 ="
                   "= 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{"
                   "% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = m"
                   "essage['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_"
                   "of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}"},
    };
    const char *tmpl = template_override ? template_override : t->chat_template;
    for (size_t i = 0; template_override && i < sizeof families / sizeof families[0]; i++)
        if (!strcmp(template_override, families[i].name)) tmpl = families[i].tmpl;
    if (!tmpl)
        return wgt_error(WGT_ERR_NOT_FOUND, "the tokenizer has no chat template: pass one, or a family name "
                                            "(chatml, llama3, llama2, mistral, gemma), as the override");
    const char *bos = t->bos >= 0 ? t->text[t->bos] : "", *eos = t->eos >= 0 ? t->text[t->eos] : "";
    return tok_render_template(tmpl, msgs, n_msgs, add_generation_prompt, bos, eos, vars, n_vars, text);
}
