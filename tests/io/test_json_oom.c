/* Running out of host memory while parsing JSON is WGT_ERR_OUT_OF_MEMORY, not "invalid JSON"
 * (cJSON answers NULL for both). The model-config parser (wgt_hf_config_parse) and the
 * tokenizer.json reader (wgt_tokenizer_open) each parse, in a child process whose address space
 * is capped (RLIMIT_AS) a few MiB above what it uses, a valid JSON text of a million values whose
 * tree needs about 64 MiB: the status must be WGT_ERR_OUT_OF_MEMORY naming the parse. Under the
 * same cap a malformed text must still be WGT_ERR_FORMAT (a stale ENOMEM is no excuse). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/check.h"

enum { VALUES = 1000000 };

/* {"model_type": "llama", "pad": [0,0,...]}: 2 bytes a value. */
static char *big_json(size_t *len)
{
    const char *head = "{\"model_type\": \"llama\", \"pad\": [", *tail = "0]}";
    size_t n = strlen(head) + 2 * (size_t)VALUES + strlen(tail);
    char *s = malloc(n + 1);
    if (!s) return NULL;
    char *p = s + strlen(strcpy(s, head));
    for (int i = 0; i < VALUES; i++) *p++ = '0', *p++ = ',';
    strcpy(p, tail);
    *len = strlen(s);
    return s;
}

/* Cap the address space at what the process maps now plus extra bytes. */
static int cap_memory(size_t extra)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f) return -1;
    int ok = fscanf(f, "%lu", &pages) == 1;
    fclose(f);
    if (!ok) return -1;
    struct rlimit r;
    r.rlim_cur = r.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + extra;
    return setrlimit(RLIMIT_AS, &r);
}

/* In a child under the cap: 0 when the parse of `big` ran out of memory as a status and the
 * malformed text is still invalid JSON. */
static int child(const char *what, const char *big, size_t len, const char *path)
{
    wgt_hf_config c;
    wgt_tokenizer *tok = NULL;
    if (cap_memory((size_t)8 << 20)) {
        fprintf(stderr, "%s: setrlimit failed\n", what);
        return 2;
    }
    wgt_status st = path ? wgt_tokenizer_open(path, &tok) : wgt_hf_config_parse(big, len, "config.json", &c);
    if (st != WGT_ERR_OUT_OF_MEMORY || !strstr(wgt_errmsg(), "out of host memory parsing")) {
        fprintf(stderr, "%s: want WGT_ERR_OUT_OF_MEMORY (out of host memory parsing), got %s: %s\n", what,
                wgt_status_str(st), wgt_errmsg());
        return 1;
    }
    printf("%s: %s: %s\n", what, wgt_status_str(st), wgt_errmsg());
    st = wgt_hf_config_parse("{\"a\": ", 6, "config.json", &c);
    if (st != WGT_ERR_FORMAT || !strstr(wgt_errmsg(), "invalid JSON")) {
        fprintf(stderr, "%s: malformed text under the cap: want WGT_ERR_FORMAT, got %s: %s\n", what, wgt_status_str(st),
                wgt_errmsg());
        return 1;
    }
    return 0;
}

static int run_child(const char *what, const char *big, size_t len, const char *path)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int rc = child(what, big, len, path);
        fflush(NULL);
        _exit(rc);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int main(void)
{
    size_t len;
    char *big = big_json(&len);
    CHECK(big != NULL, "no memory for the text");
    if (!big) return test_finish("test_json_oom");
    /* the children first: memory this process freed stays mapped, and would be theirs to use */
    CHECK(run_child("config.json", big, len, NULL) == 0, "config.json under a memory cap (see above)");

    char dir[] = "/tmp/wgt_json_oom_XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(big, 1, len, f) == len, "write %s", path);
    if (f) fclose(f);
    CHECK(run_child("tokenizer.json", big, len, path) == 0, "tokenizer.json under a memory cap (see above)");
    /* without the cap both parse (the text is valid: the failures above were memory, not syntax);
     * the tokenizer then fails for what a tokenizer.json lacks */
    wgt_hf_config c;
    CHECK(wgt_hf_config_parse(big, len, "config.json", &c) == WGT_OK, "uncapped parse: %s", wgt_errmsg());
    wgt_tokenizer *tok = NULL;
    wgt_status st = wgt_tokenizer_open(path, &tok);
    CHECK(st == WGT_ERR_FORMAT && strstr(wgt_errmsg(), "no model.type"), "uncapped tokenizer.json: %s: %s",
          wgt_status_str(st), wgt_errmsg());
    wgt_tokenizer_free(tok);
    remove(path);
    rmdir(dir);
    free(big);
    return test_finish("test_json_oom");
}
