/* The tests' xorshift64 generator: test_uniform(lo, hi) draws from [lo, hi), test_rng_next() 64
 * bits. A test that wants its own sequence sets test_rng to its seed before the first draw. */
#ifndef WGT_TESTS_RNG_H
#define WGT_TESTS_RNG_H

#include <stdint.h>

static uint64_t test_rng = 0x9E3779B97F4A7C15ull;

/* The next 64 random bits. */
static inline uint64_t test_rng_next(void)
{
    test_rng ^= test_rng << 13, test_rng ^= test_rng >> 7, test_rng ^= test_rng << 17;
    return test_rng;
}

static inline double test_uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(test_rng_next() >> 11) / 9007199254740992.0;
}

#endif
