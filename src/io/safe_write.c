/* Safe output files: what every file wgt writes goes through (GGUF, safetensors, checkpoints).
 *
 * The bytes go to a temporary file created next to the final name (same directory, so the rename
 * cannot cross file systems); commit flushes and fsyncs it, renames it over the final name and
 * fsyncs the directory, so that after a crash, Ctrl-C or SIGKILL the final name holds either the
 * previous file or the complete new one: never a partial file. A failure only ever removes the
 * temporary file, never the path the user named (which may be a device node, or the input).
 *
 * The output is checked before anything is created: it must not be the same file as an input
 * (device and inode compared, so links and "./x" vs "x" are caught), and an existing output must
 * be a regular file that the caller allowed to replace. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "io/io.h"

struct wgt_output {
    char *path; /* the final name */
    char *tmp;  /* the temporary file, removed unless renamed */
    char *dir;  /* its directory, fsynced after the rename */
    FILE *f;
    int slot;   /* its entry in the signal cleanup table, -1 if none */
};

/* Temporary files a signal handler must remove. A handler may only call async-signal-safe
 * functions (unlink is one) and read what is fully written, hence fixed buffers published by an
 * atomic flag. More open outputs than slots still work; only their signal cleanup is lost. */
#define CLEANUP_SLOTS 16
#define CLEANUP_PATH 4096
static char cleanup_path[CLEANUP_SLOTS][CLEANUP_PATH];
static atomic_int cleanup_used[CLEANUP_SLOTS]; /* 0 free, 1 being filled, 2 published */

static int cleanup_register(const char *tmp)
{
    if (strlen(tmp) >= CLEANUP_PATH) return -1;
    for (int i = 0; i < CLEANUP_SLOTS; i++) {
        int expect = 0;
        if (atomic_compare_exchange_strong(&cleanup_used[i], &expect, 1)) {
            memcpy(cleanup_path[i], tmp, strlen(tmp) + 1);
            atomic_store(&cleanup_used[i], 2);
            return i;
        }
    }
    return -1;
}

static void cleanup_release(int slot)
{
    if (slot >= 0) atomic_store(&cleanup_used[slot], 0);
}

static void on_signal(int sig)
{
    for (int i = 0; i < CLEANUP_SLOTS; i++)
        if (atomic_load(&cleanup_used[i]) == 2) unlink(cleanup_path[i]);
    /* die of the same signal, as the caller's parent expects (exit status 128 + sig in a shell) */
    signal(sig, SIG_DFL);
    raise(sig);
}

wgt_status wgt_output_cleanup_on_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        /* a signal the parent chose to ignore (nohup, background jobs) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        if (sigaction(sigs[i], &sa, NULL) != 0)
            return wgt_error(WGT_ERR_INTERNAL, "installing the handler of signal %d: %s", sigs[i], strerror(errno));
    }
    return WGT_OK;
}

/* The output is the same file as input (stat follows links: a link to an input is caught). */
static wgt_status check_input(const char *path, const struct stat *o, const char *input)
{
    struct stat s;
    if (!input || stat(input, &s) != 0) return WGT_OK; /* an input that is gone cannot be destroyed */
    if (s.st_dev == o->st_dev && s.st_ino == o->st_ino)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: the output is the input file %s: choose another output path", path, input);
    return WGT_OK;
}

static wgt_status check_output(const char *path, const wgt_output_options *opts)
{
    struct stat o;
    if (stat(path, &o) != 0) {
        if (errno == ENOENT) return WGT_OK; /* a new file (or a dangling link, which rename replaces) */
        return wgt_error(WGT_ERR_IO, "%s: cannot inspect the output path: %s", path, strerror(errno));
    }
    if (S_ISDIR(o.st_mode))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: the output is a directory: give a file name inside it", path);
    if (!S_ISREG(o.st_mode))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: the output exists and is not a regular file (a device, fifo or socket): "
                                                   "refusing to replace it; give a file path", path);
    if (opts) {
        for (size_t i = 0; i < opts->n_inputs; i++) {
            wgt_status st = check_input(path, &o, opts->inputs[i]);
            if (st) return st;
        }
        if (opts->input_dir) {
            DIR *d = opendir(opts->input_dir);
            if (!d) return wgt_error(WGT_ERR_IO, "%s: cannot list %s: %s", path, opts->input_dir, strerror(errno));
            struct dirent *e;
            wgt_status st = WGT_OK;
            char full[8192];
            while (!st && (e = readdir(d))) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
                snprintf(full, sizeof full, "%s/%s", opts->input_dir, e->d_name);
                st = check_input(path, &o, full);
            }
            closedir(d);
            if (st) return st;
        }
    }
    if (!opts || !opts->replace)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: the output already exists: not replaced (use --force to replace it)", path);
    return WGT_OK;
}

wgt_status wgt_output_open(const char *path, const wgt_output_options *opts, wgt_output **out)
{
    if (!out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_output_open: out is NULL");
    *out = NULL;
    if (!path || !*path) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_output_open: empty output path");
    size_t n = strlen(path);
    if (path[n - 1] == '/') return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: the output is a directory: give a file name inside it", path);
    wgt_status st = check_output(path, opts);
    if (st) return st;

    wgt_output *o = calloc(1, sizeof *o);
    if (!o) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: output", path);
    o->slot = -1;
    const char *sl = strrchr(path, '/');
    const char *base = sl ? sl + 1 : path;
    o->path = wgt_strndup(path, n);
    o->dir = sl ? wgt_strndup(path, sl == path ? 1 : (uint64_t)(sl - path)) : wgt_strndup(".", 1);
    o->tmp = malloc((size_t)(base - path) + strlen(base) + 16);
    if (!o->path || !o->dir || !o->tmp) {
        wgt_output_abort(o);
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: output", path);
    }
    /* hidden, and named after the output, so a stray one (after SIGKILL) says where it came from */
    sprintf(o->tmp, "%.*s.%s.wgt-XXXXXX", (int)(base - path), path, base);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        st = wgt_error(WGT_ERR_IO, "%s: cannot create a temporary file in %s: %s", path, o->dir, strerror(errno));
        free(o->tmp);
        o->tmp = NULL; /* nothing to remove */
        wgt_output_abort(o);
        return st;
    }
    o->slot = cleanup_register(o->tmp);
    /* mkstemp makes 0600; a model file is as readable as any file the user creates */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || !(o->f = fdopen(fd, "wb"))) {
        st = wgt_error(WGT_ERR_IO, "%s: temporary file %s: %s", path, o->tmp, strerror(errno));
        if (!o->f) close(fd);
        wgt_output_abort(o);
        return st;
    }
    *out = o;
    return WGT_OK;
}

FILE *wgt_output_file(wgt_output *o)
{
    return o ? o->f : NULL;
}

const char *wgt_output_path(const wgt_output *o)
{
    return o ? o->path : NULL;
}

wgt_status wgt_output_write(wgt_output *o, const void *data, uint64_t bytes)
{
    if (!o || !o->f) return wgt_error(WGT_ERR_MISUSE, "wgt_output_write: no open output");
    return wgt_write_all(o->f, data, bytes, o->path);
}

wgt_status wgt_output_commit(wgt_output *o)
{
    if (!o || !o->f) {
        wgt_output_abort(o);
        return wgt_error(WGT_ERR_MISUSE, "wgt_output_commit: no open output");
    }
    wgt_status st = WGT_OK;
    if (fflush(o->f) != 0 || fsync(fileno(o->f)) != 0)
        st = wgt_error(WGT_ERR_IO, "%s: writing %s failed: %s", o->path, o->tmp, strerror(errno));
    int rc = fclose(o->f);
    o->f = NULL;
    if (!st && rc != 0) st = wgt_error(WGT_ERR_IO, "%s: closing %s failed: %s", o->path, o->tmp, strerror(errno));
    /* the checks of open, again: the path may have changed while the file was written */
    if (!st) {
        struct stat s;
        if (stat(o->path, &s) == 0 && !S_ISREG(s.st_mode))
            st = wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: became a non-regular file while it was written: not replaced", o->path);
    }
    if (!st && rename(o->tmp, o->path) != 0)
        st = wgt_error(WGT_ERR_IO, "%s: renaming %s over it failed: %s", o->path, o->tmp, strerror(errno));
    if (st) {
        wgt_output_abort(o);
        return st;
    }
    cleanup_release(o->slot);
    o->slot = -1;
    free(o->tmp);
    o->tmp = NULL; /* renamed: nothing left to remove */
    /* the rename itself is durable only once the directory is synced; a directory that cannot be
     * opened for it (some file systems) leaves the file complete, just not yet durable */
    int dfd = open(o->dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        if (fsync(dfd) != 0 && errno != EINVAL && errno != EROFS)
            st = wgt_error(WGT_ERR_IO, "%s: syncing directory %s: %s", o->path, o->dir, strerror(errno));
        close(dfd);
    }
    wgt_output_abort(o);
    return st;
}

void wgt_output_abort(wgt_output *o)
{
    if (!o) return;
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    cleanup_release(o->slot);
    free(o->tmp);
    free(o->dir);
    free(o->path);
    free(o);
}
