/* Small helpers for the io tests: failure counting, temporary files, byte builders. */
#ifndef WGT_TESTS_IO_TEST_H
#define WGT_TESTS_IO_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wgt.h"

static int failures;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            failures++;                                                        \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
        }                                                                      \
    } while (0)

#define CHECK_OK(expr)                                                                      \
    do {                                                                                    \
        wgt_status st_ = (expr);                                                            \
        CHECK(st_ == WGT_OK, "%s -> %s: %s", #expr, wgt_status_str(st_), wgt_errmsg());    \
    } while (0)

static inline int finish(const char *name)
{
    if (failures) fprintf(stderr, "%s: %d failure(s)\n", name, failures);
    else printf("%s: all checks passed\n", name);
    return failures ? 1 : 0;
}

/* A fresh path under $TMPDIR (or /tmp), unique per process. */
static inline const char *tmp_path(const char *suffix)
{
    static char buf[8][512];
    static int k;
    const char *dir = getenv("TMPDIR");
    char *p = buf[k++ % 8];
    snprintf(p, 512, "%s/wgt-io-%d-%d%s", dir && *dir ? dir : "/tmp", (int)getpid(), k, suffix);
    return p;
}

static inline int write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = n ? fwrite(data, 1, n, f) : 0;
    fclose(f);
    return w == n ? 0 : -1;
}

static inline void *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc((size_t)len + 1);
    *n = fread(p, 1, (size_t)len, f);
    fclose(f);
    return p;
}

/* A growable byte buffer for building files by hand. */
typedef struct bytes {
    uint8_t *p;
    size_t n, cap;
} bytes;

static inline void b_put(bytes *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static inline void b_u8(bytes *b, uint8_t v) { b_put(b, &v, 1); }
static inline void b_u32(bytes *b, uint32_t v) { b_put(b, &v, 4); }
static inline void b_u64(bytes *b, uint64_t v) { b_put(b, &v, 8); }
static inline void b_str(bytes *b, const char *s) { b_u64(b, strlen(s)); b_put(b, s, strlen(s)); }
static inline void b_pad(bytes *b, size_t a) { while (b->n % a) b_u8(b, 0); }

#endif
