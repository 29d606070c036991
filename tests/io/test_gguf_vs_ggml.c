/* Differential: our GGUF reader against ggml's own (gguf_init_from_file in libggml-base.so of the
 * pinned prebuilt llama.cpp, see test_ggml_ref.c) on the seed corpus (hand-made seeds and small
 * fuzz-found files), the fuzz regressions, and a file of every metadata type from our writer.
 * Each ggml call runs in a child process, so an abort there is a finding, not a crash here.
 * When both accept, metadata count, tensor count, data offset, tensor names and offsets must
 * agree. ggml may refuse what we accept only for two known reasons, which the GGUF
 * specification allows and we therefore accept: arrays of arrays ("invalid GGUF type 9"), and
 * tensors not stored back to back in declaration order ("has offset N, expected M"). ggml must
 * never accept what we refuse. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "io/io_test.h"

struct gguf_init_params { bool no_alloc; void **ctx; };
static void *(*g_init)(const char *, struct gguf_init_params);
static int64_t (*g_n_kv)(const void *), (*g_n_tensors)(const void *);
static size_t (*g_data_offset)(const void *), (*g_tensor_offset)(const void *, int64_t);
static const char *(*g_tensor_name)(const void *, int64_t);
static void (*g_free)(void *);
static int n_agree, n_reject, n_known;

/* ggml's view in a child: "OK kv tensors offset hash" or "REJ <its log>" */
static void ggml_view(const char *path, char *out, size_t cap)
{
    int fd[2];
    if (pipe(fd)) return;
    pid_t pid = fork();
    if (!pid) {
        close(fd[0]);
        dup2(fd[1], 2);
        char buf[512] = "REJ ";
        void *g = g_init(path, (struct gguf_init_params){true, NULL});
        if (g) {
            unsigned long long h = 0;
            int64_t nt = g_n_tensors(g);
            for (int64_t i = 0; i < nt; i++) {
                h = h * 31 + g_tensor_offset(g, i);
                for (const char *s = g_tensor_name(g, i); *s; s++) h = h * 131 + (unsigned char)*s;
            }
            snprintf(buf, sizeof buf, "OK %lld %lld %zu %llu", (long long)g_n_kv(g), (long long)nt, nt ? g_data_offset(g) : 0, h);
            g_free(g);
        }
        if (write(fd[1], buf, strlen(buf))) {}
        _exit(0);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t k;
    while (n + 1 < cap && (k = read(fd[0], out + n, cap - 1 - n)) > 0) n += (size_t)k;
    out[n] = 0;
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status)) snprintf(out, cap, "CRASH (signal %d)", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void compare(const char *path)
{
    char theirs[4096], ours[512] = "REJ";
    ggml_view(path, theirs, sizeof theirs);
    wgt_gguf *g;
    wgt_status st = wgt_gguf_open(path, &g);
    if (!st) {
        unsigned long long h = 0;
        for (int64_t i = 0; i < wgt_gguf_tensor_count(g); i++) {
            const wgt_gguf_tensor *t = wgt_gguf_tensor_at(g, i);
            h = h * 31 + (t->offset - wgt_gguf_data_offset(g));
            for (const char *s = t->name; *s; s++) h = h * 131 + (unsigned char)*s;
        }
        snprintf(ours, sizeof ours, "OK %lld %lld %llu %llu", (long long)wgt_gguf_kv_count(g), (long long)wgt_gguf_tensor_count(g),
                 (unsigned long long)(wgt_gguf_tensor_count(g) ? wgt_gguf_data_offset(g) : 0), h);
        wgt_gguf_free(g);
    }
    int t_ok = !strncmp(theirs, "OK", 2), o_ok = !st;
    CHECK(strncmp(theirs, "CRASH", 5), "%s: ggml crashed: %s", path, theirs);
    if (t_ok && o_ok) {
        CHECK(!strcmp(theirs, ours), "%s: ggml reads %s, we read %s", path, theirs, ours);
        n_agree++;
    } else if (t_ok) {
        CHECK(0, "%s: ggml accepts it, we refuse: %s", path, wgt_errmsg());
    } else if (o_ok) {
        int known = strstr(theirs, "invalid GGUF type 9") || (strstr(theirs, "has offset") && strstr(theirs, "expected"));
        CHECK(known, "%s: we accept it, ggml refuses it for an unknown reason: %s", path, theirs);
        n_known++;
    } else {
        n_reject++;
    }
}

static void each(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        compare(p);
    }
    if (d) closedir(d);
}

int main(void)
{
    const char *r = getenv("WGT_ROOT"), *build = getenv("WGT_BUILD");
    const char *root = r ? r : ".";
    char lib[2048], cmd[4096], p[2048];
    snprintf(lib, sizeof lib, "%s/tests/io/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so", root);
    if (access(lib, R_OK) != 0) {
        snprintf(cmd, sizeof cmd, "cd '%s/tests/io' && npm ci --no-audit --no-fund >/dev/null", root);
        if (system(cmd)) fprintf(stderr, "npm ci failed\n");
    }
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "FAIL: %s: %s\n", lib, dlerror());
        return 1;
    }
    *(void **)&g_init = dlsym(h, "gguf_init_from_file");
    *(void **)&g_n_kv = dlsym(h, "gguf_get_n_kv");
    *(void **)&g_n_tensors = dlsym(h, "gguf_get_n_tensors");
    *(void **)&g_data_offset = dlsym(h, "gguf_get_data_offset");
    *(void **)&g_tensor_offset = dlsym(h, "gguf_get_tensor_offset");
    *(void **)&g_tensor_name = dlsym(h, "gguf_get_tensor_name");
    *(void **)&g_free = dlsym(h, "gguf_free");
    if (!g_init || !g_n_kv || !g_n_tensors || !g_data_offset || !g_tensor_offset || !g_tensor_name || !g_free) {
        fprintf(stderr, "FAIL: a gguf_* function is missing\n");
        return 1;
    }
    snprintf(p, sizeof p, "%s/fuzz/corpus/gguf", root);
    each(p);
    snprintf(p, sizeof p, "%s/fuzz/regressions/gguf", root);
    each(p);
    const char *mine = tmp_path(".gguf");
    snprintf(cmd, sizeof cmd, "'%s/tests/test_gguf' --write '%s' >/dev/null", build ? build : "build", mine);
    CHECK(system(cmd) == 0, "test_gguf --write");
    compare(mine); /* holds nested arrays: the known refusal */
    remove(mine);
    printf("%d files both readers accept alike, %d both refuse, %d only we accept (nested arrays, unpacked layout)\n", n_agree,
           n_reject, n_known);
    CHECK(n_agree > 0 && n_reject > 0, "the corpus exercises both outcomes");
    return finish("test_gguf_vs_ggml");
}
