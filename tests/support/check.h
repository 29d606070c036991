/* Minimal test helpers: CHECK prints the failing expression with its location and counts failures;
 * a test's main returns test_finish(), which is non-zero if any check failed. */
#ifndef WGT_TESTS_CHECK_H
#define WGT_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "wgt.h"

static int test_failures;
static int test_checks;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        test_checks++;                                                                             \
        if (!(cond)) {                                                                             \
            test_failures++;                                                                       \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);              \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

/* A call that must succeed; on failure the test cannot go on. */
#define MUST(call)                                                                                 \
    do {                                                                                           \
        wgt_status must_st_ = (call);                                                              \
        if (must_st_ != WGT_OK) {                                                                  \
            fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,               \
                    wgt_status_str(must_st_), wgt_errmsg());                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* The default device context and a CPU-reference one (the differential tests' pair). */
static inline void test_contexts(wgt_context **dev, wgt_context **ref)
{
    MUST(wgt_context_create(NULL, dev));
    wgt_context_options ro = {0};
    ro.backend = WGT_BACKEND_CPU;
    MUST(wgt_context_create(&ro, ref));
}

static inline int test_finish(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, test_checks, test_failures);
    return test_failures ? 1 : 0;
}

#endif
