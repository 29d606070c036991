/* Replaying a fuzz target's inputs under the normal build: its seed corpus (fuzz/corpus/<target>/)
 * and its findings (fuzz/regressions/<target>/, one file per finding, when there are any), each
 * through the target's own LLVMFuzzerTestOneInput (included by the test under another name). A
 * crash fails the test; the sanitized runs are scripts/fuzz.sh's (make fuzz). */
#ifndef WGT_TESTS_FUZZ_REPLAY_H
#define WGT_TESTS_FUZZ_REPLAY_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct fuzz_target {
    const char *name;                           /* the folder under fuzz/corpus and fuzz/regressions */
    int (*one)(const uint8_t *data, size_t len); /* the target's entry point */
} fuzz_target;

/* Every file of ROOT/fuzz/KIND/TARGET through one; the number of files replayed. */
static inline int fuzz_replay_dir(const char *root, const char *kind, const fuzz_target *t)
{
    char dir_path[2048];
    snprintf(dir_path, sizeof dir_path, "%s/fuzz/%s/%s", root, kind, t->name);
    DIR *d = opendir(dir_path);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char f[4096];
        snprintf(f, sizeof f, "%s/%s", dir_path, e->d_name);
        FILE *fp = fopen(f, "rb");
        if (!fp) continue;
        uint8_t *data = NULL;
        size_t len = 0, cap = 0, got;
        do { /* the whole file, whatever its size */
            if (len == cap) {
                uint8_t *grown = realloc(data, cap = cap ? 2 * cap : 4096);
                if (!grown) {
                    free(data);
                    data = NULL;
                    break;
                }
                data = grown;
            }
            got = fread(data + len, 1, cap - len, fp);
            len += got;
        } while (got > 0);
        fclose(fp);
        if (data) t->one(data, len);
        free(data);
        n++;
    }
    if (d) closedir(d);
    return n;
}

/* Replays every target's seed corpus and findings (root: WGT_ROOT, else "."), printing the counts;
 * returns the number of targets whose seed corpus is empty or missing, each named on stderr.
 * *replayed (when not NULL) gets the number of inputs replayed. */
static inline int fuzz_replay_all(const fuzz_target *targets, int n, int *replayed)
{
    const char *r = getenv("WGT_ROOT");
    const char *root = r ? r : ".";
    int missing = 0, total = 0;
    for (int i = 0; i < n; i++) {
        int seeds = fuzz_replay_dir(root, "corpus", &targets[i]);
        int found = fuzz_replay_dir(root, "regressions", &targets[i]);
        printf("%-18s %d seeds, %d regression inputs replayed\n", targets[i].name, seeds, found);
        if (!seeds) {
            fprintf(stderr, "fuzz/corpus/%s is empty or missing under %s (WGT_ROOT)\n", targets[i].name, root);
            missing++;
        }
        total += seeds + found;
    }
    if (replayed) *replayed = total;
    return missing;
}

#endif
