/* The tests' xorshift64 generator: test_uniform(lo, hi) draws from [lo, hi). A test that wants its
 * own sequence sets test_rng to its seed before the first draw. */
#ifndef WGT_TESTS_RNG_H
#define WGT_TESTS_RNG_H

#include <stdint.h>

static uint64_t test_rng = 0x9E3779B97F4A7C15ull;

static inline double test_uniform(double lo, double hi)
{
    test_rng ^= test_rng << 13, test_rng ^= test_rng >> 7, test_rng ^= test_rng << 17;
    return lo + (hi - lo) * (double)(test_rng >> 11) / 9007199254740992.0;
}

#endif
