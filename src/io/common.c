#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "io/io.h"

wgt_status wgt_map_open(const char *path, wgt_map *out)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return wgt_error(errno == ENOENT ? WGT_ERR_NOT_FOUND : WGT_ERR_IO, "%s: cannot open: %s",
                         path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return wgt_error(WGT_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return wgt_error(WGT_ERR_IO, "%s: not a regular file", path);
    }
    out->size = (uint64_t)sb.st_size;
    if (out->size > 0) {
        if (out->size > (uint64_t)SIZE_MAX) {
            close(fd);
            return wgt_error(WGT_ERR_LIMIT, "%s: too large to map on this system", path);
        }
        void *p = mmap(NULL, (size_t)out->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return wgt_error(WGT_ERR_IO, "%s: cannot map %llu bytes: %s", path,
                             (unsigned long long)out->size, strerror(e));
        }
        out->data = p;
    }
    close(fd);
    return WGT_OK;
}

void wgt_map_close(wgt_map *m)
{
    if (m->data && !m->borrowed) munmap((void *)m->data, (size_t)m->size);
    m->data = NULL;
    m->size = 0;
}

int wgt_utf8_valid(const char *str, uint64_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    uint64_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int n;
        unsigned cp, min;
        if ((c & 0xe0) == 0xc0) n = 1, cp = c & 0x1f, min = 0x80;
        else if ((c & 0xf0) == 0xe0) n = 2, cp = c & 0x0f, min = 0x800;
        else if ((c & 0xf8) == 0xf0) n = 3, cp = c & 0x07, min = 0x10000;
        else return 0;
        if ((uint64_t)n > len - i - 1) return 0;
        for (int k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return 0;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        i += (uint64_t)n + 1;
    }
    return 1;
}

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

wgt_status wgt_names_init(wgt_names *t, uint64_t n)
{
    memset(t, 0, sizeof *t);
    uint64_t cap = 16;
    while (cap < 2 * n) {
        if (cap > (1ull << 40)) return wgt_error(WGT_ERR_LIMIT, "name table: %llu names", (unsigned long long)n);
        cap *= 2;
    }
    t->keys = calloc((size_t)cap, sizeof *t->keys);
    t->vals = calloc((size_t)cap, sizeof *t->vals);
    if (!t->keys || !t->vals) {
        wgt_names_free(t);
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "name table of %llu entries", (unsigned long long)cap);
    }
    t->cap = cap;
    return WGT_OK;
}

int64_t wgt_names_put(wgt_names *t, const char *name, int64_t val)
{
    for (uint64_t i = hash(name) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (!t->keys[i]) {
            t->keys[i] = name;
            t->vals[i] = val;
            return -1;
        }
        if (!strcmp(t->keys[i], name)) return t->vals[i];
    }
}

int64_t wgt_names_get(const wgt_names *t, const char *name)
{
    if (!t->cap || !name) return -1;
    for (uint64_t i = hash(name) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (!t->keys[i]) return -1;
        if (!strcmp(t->keys[i], name)) return t->vals[i];
    }
}

void wgt_names_free(wgt_names *t)
{
    free(t->keys);
    free(t->vals);
    memset(t, 0, sizeof *t);
}

wgt_status wgt_write_all(void *f, const void *data, uint64_t bytes, const char *path)
{
    if (bytes && fwrite(data, 1, (size_t)bytes, (FILE *)f) != bytes)
        return wgt_error(WGT_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return WGT_OK;
}

char *wgt_strndup(const char *s, uint64_t len)
{
    if (len >= SIZE_MAX) return NULL;
    char *p = malloc((size_t)len + 1);
    if (!p) return NULL;
    memcpy(p, s, (size_t)len);
    p[len] = 0;
    return p;
}
