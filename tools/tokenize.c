/* wgt tokenize / wgt detokenize: text to ids and back, with any tokenizer wgt can open. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "io/json_util.h"
#include "wgt.h"

static void tokenize_usage(FILE *f)
{
    fprintf(f, "usage: wgt tokenize -t TOKENIZER [--no-special] [--no-bos] [--file F | TEXT...]\n"
               "  prints the ids, space-separated, on one line.\n"
               "  TOKENIZER: a tokenizer.json, a SentencePiece .model, a GGUF file, a directory with\n"
               "  encoder.json + vocab.bpe, or a Hugging Face model directory.\n"
               "  --no-special  special tokens written in the text are encoded as plain text\n"
               "  --no-bos      do not add BOS/EOS (added as the model's configuration says)\n"
               "  --file F      read the text from F ('-' for stdin); TEXT words are joined with spaces\n"
               "  --jsonl F     each line of F is a JSON string: print one line of ids per line\n"
               "  --chat        TEXT is a user message: render the model's chat template (with a\n"
               "                generation prompt) and encode the result\n"
               "  --system S    with --chat: a system message first\n"
               "  --template T  with --chat: use T instead of the model's template: chatml, llama3,\n"
               "                llama2, mistral, gemma, or @FILE for a Jinja template file\n"
               "  --render      with --chat: print the rendered text instead of ids\n"
               "  --messages F  with --chat: the conversation from F, a JSON array of {role, content}\n"
               "  --var N=V     with --chat: a template variable (repeatable), e.g. enable_thinking=false\n"
               "usage: wgt detokenize -t TOKENIZER [--skip-special] [--jsonl F | ID...]\n"
               "  --jsonl F     each line of F is a JSON array of ids: print each text as a JSON string\n"
               "  --stream      with --jsonl: decode with the streaming decoder, printing its chunks as a\n"
               "                JSON array (a chunk never ends inside a UTF-8 sequence)\n");
}

int tool_read_all(FILE *f, char **out, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) return -1;
    size_t r;
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) {
                free(buf);
                return -1;
            }
            buf = b;
        }
    }
    if (ferror(f)) { /* a folder opens but reads as EISDIR: an error, not an empty text */
        free(buf);
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
}


/* Batch mode for tests and scripts: one JSON value per line in, one result per line out. */
static int each_json_line(const char *path, int (*fn)(cJSON *v, void *arg), void *arg)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    char *data;
    size_t len;
    if (!f || tool_read_all(f, &data, &len)) {
        fprintf(stderr, "wgt: cannot read %s\n", path);
        return 1;
    }
    if (f != stdin) fclose(f);
    int rc = 0, line = 0;
    for (char *p = data, *end = data + len; p < end && !rc;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *e = nl ? nl : end;
        line++;
        if (e > p) {
            cJSON *v = NULL;
            char name[1100];
            snprintf(name, sizeof name, "%s:%d", path, line);
            if (wgt_json_parse(p, (uint64_t)(e - p), name, &v)) {
                fprintf(stderr, "wgt: %s\n", wgt_errmsg());
                rc = 2;
            } else {
                rc = fn(v, arg);
                cJSON_Delete(v);
            }
        }
        p = e + 1;
    }
    free(data);
    return rc;
}

typedef struct batch { wgt_tokenizer *tok; unsigned flags; int skip_special, stream; } batch;

static int print_ids(const int32_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
    printf("\n");
    return 0;
}

static int tokenize_line(cJSON *v, void *arg)
{
    batch *b = arg;
    if (!cJSON_IsString(v)) {
        fprintf(stderr, "wgt tokenize: --jsonl lines must be JSON strings\n");
        return 2;
    }
    int32_t *ids;
    size_t n;
    if (wgt_tokenizer_encode(b->tok, v->valuestring, strlen(v->valuestring), b->flags, &ids, &n)) {
        fprintf(stderr, "wgt tokenize: %s\n", wgt_errmsg());
        return 1;
    }
    print_ids(ids, n);
    free(ids);
    return 0;
}

static int detokenize_line(cJSON *v, void *arg)
{
    batch *b = arg;
    int n = cJSON_GetArraySize(v);
    int32_t *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
    if (!ids || !cJSON_IsArray(v)) {
        fprintf(stderr, "wgt detokenize: --jsonl lines must be JSON arrays of ids\n");
        free(ids);
        return 2;
    }
    int i = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, v) {
        /* range first: converting 1e20 to int32 is undefined behaviour */
        double d = cJSON_IsNumber(e) ? e->valuedouble : -1;
        if (!(d >= 0 && d <= INT32_MAX) || d != (double)(int32_t)d) {
            char *bad = cJSON_PrintUnformatted(e);
            fprintf(stderr, "wgt detokenize: --jsonl: %s is not a token id (a whole number from 0 to %d)\n",
                    bad ? bad : "an element", INT32_MAX);
            free(bad);
            free(ids);
            return 2;
        }
        ids[i++] = (int32_t)d;
    }
    if (b->stream) { /* the streaming decoder's chunks, as a JSON array of strings */
        wgt_detokenizer *d;
        cJSON *chunks = cJSON_CreateArray();
        wgt_status st = wgt_detokenizer_create(b->tok, b->skip_special, &d);
        for (int k = 0; !st && k <= n; k++) {
            const char *chunk;
            size_t len;
            st = k < n ? wgt_detokenizer_push(d, ids[k], &chunk, &len) : wgt_detokenizer_flush(d, &chunk, &len);
            char *copy = st ? NULL : malloc(len + 1);
            if (copy) {
                memcpy(copy, chunk, len);
                copy[len] = 0;
                cJSON_AddItemToArray(chunks, cJSON_CreateString(copy));
                free(copy);
            }
        }
        wgt_detokenizer_free(d);
        free(ids);
        char *out = st ? NULL : cJSON_PrintUnformatted(chunks);
        if (out) printf("%s\n", out);
        else fprintf(stderr, "wgt detokenize: %s\n", wgt_errmsg());
        free(out);
        cJSON_Delete(chunks);
        return out ? 0 : 1;
    }
    char *text;
    size_t len;
    wgt_status st = wgt_tokenizer_decode(b->tok, ids, (size_t)n, b->skip_special, &text, &len);
    free(ids);
    if (st) {
        fprintf(stderr, "wgt detokenize: %s\n", wgt_errmsg());
        return 1;
    }
    cJSON *s = cJSON_CreateString(text);
    char *out = s ? cJSON_PrintUnformatted(s) : NULL;
    if (out) printf("%s\n", out);
    free(out);
    cJSON_Delete(s);
    free(text);
    return out ? 0 : 1;
}

static int common_args(int argc, char **argv, int i, const char **tok_path)
{
    if ((!strcmp(argv[i], "-t") || !strcmp(argv[i], "--tokenizer")) && i + 1 < argc) {
        *tok_path = argv[i + 1];
        return 2;
    }
    return 0;
}

int cmd_tokenize(int argc, char **argv)
{
    const char *tok_path = NULL, *file = NULL, *jsonl = NULL, *system = NULL, *tmpl = NULL;
    int chat = 0, render = 0, messages = 0, n_vars = 0;
    const char *vars[16];
    unsigned flags = WGT_TOKENIZE_ADD_SPECIAL | WGT_TOKENIZE_PARSE_SPECIAL;
    int first_text = 0;
    for (int i = 1; i < argc;) {
        int used = common_args(argc, argv, i, &tok_path);
        if (used) i += used;
        else if (!strcmp(argv[i], "--no-special")) flags &= ~(unsigned)WGT_TOKENIZE_PARSE_SPECIAL, i++;
        else if (!strcmp(argv[i], "--no-bos")) flags &= ~(unsigned)WGT_TOKENIZE_ADD_SPECIAL, i++;
        else if (!strcmp(argv[i], "--file") && i + 1 < argc) file = argv[i + 1], i += 2;
        else if (!strcmp(argv[i], "--jsonl") && i + 1 < argc) jsonl = argv[i + 1], i += 2;
        else if (!strcmp(argv[i], "--chat")) chat = 1, i++;
        else if (!strcmp(argv[i], "--render")) render = 1, i++;
        else if (!strcmp(argv[i], "--var") && i + 1 < argc && n_vars < 16) vars[n_vars++] = argv[i + 1], chat = 1, i += 2;
        else if (!strcmp(argv[i], "--system") && i + 1 < argc) system = argv[i + 1], i += 2;
        else if (!strcmp(argv[i], "--template") && i + 1 < argc) tmpl = argv[i + 1], i += 2;
        else if (!strcmp(argv[i], "--messages") && i + 1 < argc) file = argv[i + 1], chat = messages = 1, i += 2;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            tokenize_usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--")) {
            first_text = i + 1;
            break;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "wgt tokenize: unknown option '%s'\n", argv[i]);
            tokenize_usage(stderr);
            return 2;
        } else {
            first_text = i;
            break;
        }
    }
    if (!tok_path || (!!file + !!first_text + !!jsonl) != 1) {
        tokenize_usage(stderr);
        return 2;
    }
    if (tmpl && !tool_template_ok("tokenize", tmpl)) return 2;
    if (jsonl) {
        batch b = {NULL, flags, 0};
        if (wgt_tokenizer_open(tok_path, &b.tok)) {
            fprintf(stderr, "wgt tokenize: %s\n", wgt_errmsg());
            return 1;
        }
        int rc = each_json_line(jsonl, tokenize_line, &b);
        wgt_tokenizer_free(b.tok);
        return rc;
    }
    char *text = NULL;
    size_t len = 0;
    if (file) {
        FILE *f = strcmp(file, "-") ? fopen(file, "rb") : stdin;
        if (!f || tool_read_all(f, &text, &len)) {
            fprintf(stderr, "wgt tokenize: cannot read %s: %s\n", file, strerror(errno));
            if (f && f != stdin) fclose(f);
            return 1;
        }
        if (f != stdin) fclose(f);
    } else {
        for (int i = first_text; i < argc; i++) len += strlen(argv[i]) + 1;
        if (!(text = malloc(len + 1))) return 1;
        len = 0;
        for (int i = first_text; i < argc; i++) {
            if (i > first_text) text[len++] = ' ';
            memcpy(text + len, argv[i], strlen(argv[i]));
            len += strlen(argv[i]);
        }
    }
    wgt_tokenizer *tok;
    wgt_status st = wgt_tokenizer_open(tok_path, &tok);
    if (st) {
        fprintf(stderr, "wgt tokenize: %s\n", wgt_errmsg());
        free(text);
        return 1;
    }
    if (chat) {
        char *tmpl_text = NULL, *rendered = NULL;
        size_t tlen;
        if (tmpl && tmpl[0] == '@') {
            FILE *f = fopen(tmpl + 1, "rb");
            if (!f || tool_read_all(f, &tmpl_text, &tlen)) {
                fprintf(stderr, "wgt tokenize: cannot read the template %s\n", tmpl + 1);
                if (f) fclose(f);
                free(text);
                wgt_tokenizer_free(tok);
                return 1;
            }
            fclose(f);
            tmpl_text[tlen] = 0;
        }
        text[len] = 0;
        wgt_chat_message msgs[2] = {{"system", system ? system : ""}, {"user", text}}, *conv = NULL;
        size_t n_conv = 0;
        cJSON *json = NULL;
        int bad_json = messages && wgt_json_parse(text, len, file, &json);
        if (bad_json) fprintf(stderr, "wgt tokenize: %s\n", wgt_errmsg());
        if (messages && !bad_json) {
            n_conv = (size_t)cJSON_GetArraySize(json);
            conv = calloc(n_conv + 1, sizeof *conv);
            size_t k = 0;
            cJSON *m;
            cJSON_ArrayForEach(m, json) if (conv) {
                cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role"), *content = cJSON_GetObjectItemCaseSensitive(m, "content");
                conv[k].role = cJSON_IsString(role) ? role->valuestring : NULL;
                conv[k++].content = cJSON_IsString(content) ? content->valuestring : NULL;
            }
        }
        int bad_messages = messages && (bad_json || !cJSON_IsArray(json) || !conv);
        if (bad_messages) {
            if (!bad_json) fprintf(stderr, "wgt tokenize: %s is not a JSON array of {role, content}\n", file);
            st = WGT_ERR_INVALID_ARGUMENT;
        } else {
            st = wgt_tokenizer_apply_chat_template_vars(tok, messages ? conv : system ? msgs : msgs + 1,
                                                        messages ? n_conv : system ? 2 : 1, 1, tmpl_text ? tmpl_text : tmpl,
                                                        vars, (size_t)n_vars, &rendered);
        }
        free(conv);
        cJSON_Delete(json);
        free(tmpl_text);
        free(text);
        if (st) {
            if (!bad_messages) fprintf(stderr, "wgt tokenize: %s\n", wgt_errmsg());
            wgt_tokenizer_free(tok);
            return 1;
        }
        if (render) {
            fputs(rendered, stdout);
            free(rendered);
            wgt_tokenizer_free(tok);
            return 0;
        }
        /* The template writes BOS itself, as Hugging Face's apply_chat_template assumes. */
        text = rendered;
        len = strlen(rendered);
        flags &= ~(unsigned)WGT_TOKENIZE_ADD_SPECIAL;
    }
    int32_t *ids;
    size_t n;
    st = wgt_tokenizer_encode(tok, text, len, flags, &ids, &n);
    free(text);
    if (st) {
        fprintf(stderr, "wgt tokenize: %s\n", wgt_errmsg());
        wgt_tokenizer_free(tok);
        return 1;
    }
    for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
    printf("\n");
    free(ids);
    wgt_tokenizer_free(tok);
    return 0;
}

int cmd_detokenize(int argc, char **argv)
{
    const char *tok_path = NULL;
    const char *jsonl = NULL;
    int skip_special = 0, first_id = 0, stream = 0;
    for (int i = 1; i < argc;) {
        int used = common_args(argc, argv, i, &tok_path);
        if (used) i += used;
        else if (!strcmp(argv[i], "--skip-special")) skip_special = 1, i++;
        else if (!strcmp(argv[i], "--stream")) stream = 1, i++;
        else if (!strcmp(argv[i], "--jsonl") && i + 1 < argc) jsonl = argv[i + 1], i += 2;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            tokenize_usage(stdout);
            return 0;
        } else {
            first_id = i;
            break;
        }
    }
    if (!tok_path || (jsonl && first_id)) {
        tokenize_usage(stderr);
        return 2;
    }
    if (jsonl) {
        batch b = {NULL, 0, skip_special, stream};
        if (wgt_tokenizer_open(tok_path, &b.tok)) {
            fprintf(stderr, "wgt detokenize: %s\n", wgt_errmsg());
            return 1;
        }
        int rc = each_json_line(jsonl, detokenize_line, &b);
        wgt_tokenizer_free(b.tok);
        return rc;
    }
    size_t n = first_id ? (size_t)(argc - first_id) : 0;
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) return 1;
    for (size_t i = 0; i < n; i++) {
        char *end;
        long v = strtol(argv[first_id + (int)i], &end, 10);
        if (*end || end == argv[first_id + (int)i] || v < 0 || v > INT32_MAX) {
            fprintf(stderr, "wgt detokenize: '%s' is not a token id\n", argv[first_id + (int)i]);
            free(ids);
            return 2;
        }
        ids[i] = (int32_t)v;
    }
    wgt_tokenizer *tok;
    if (wgt_tokenizer_open(tok_path, &tok)) {
        fprintf(stderr, "wgt detokenize: %s\n", wgt_errmsg());
        free(ids);
        return 1;
    }
    char *text;
    size_t len;
    wgt_status st = wgt_tokenizer_decode(tok, ids, n, skip_special, &text, &len);
    free(ids);
    wgt_tokenizer_free(tok);
    if (st) {
        fprintf(stderr, "wgt detokenize: %s\n", wgt_errmsg());
        return 1;
    }
    fwrite(text, 1, len, stdout);
    free(text);
    return 0;
}
