/* The token collector the model tests hand to wgt_model_generate (wgt_token_fn): it keeps the first
 * TEST_COLLECT_MAX ids in order and, when limit > 0, asks generation to stop after limit tokens.
 * Zero it before each generation (test_collect c = {0}): n counts from there. */
#ifndef WGT_TESTS_COLLECT_H
#define WGT_TESTS_COLLECT_H

#include <stdint.h>

#define TEST_COLLECT_MAX 256

typedef struct test_collect {
    int32_t ids[TEST_COLLECT_MAX];
    int n;     /* ids kept (at most TEST_COLLECT_MAX) */
    int limit; /* > 0: ask to stop after this many */
} test_collect;

static inline int test_collect_token(int32_t id, void *user)
{
    test_collect *c = user;
    if (c->n < TEST_COLLECT_MAX) c->ids[c->n++] = id;
    return c->limit > 0 && c->n >= c->limit;
}

#endif
