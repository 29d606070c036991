/* The CPU reference of the random-number ops (random.c): Philox4x32-10 and the mappings from its
 * 32-bit words to every distribution, written so that the GPU kernel (src/kernels/random.wgsl)
 * produces the same integer stream and, through the same exact integer->float steps, the same
 * values (the transcendental steps of normal() aside).
 *
 * The stream of a seed: word j is output word j % 4 of Philox4x32-10 with key (seed low, seed high)
 * on the counter (block low, block high, 0, 0), block = j / 4. A call starts at a block boundary
 * `block` (the generator's offset / 4) and element i (row-major) takes word 4 * block + i, except
 * where a function says otherwise. Counters with a nonzero last word are never part of the stream:
 * randperm uses them (see below). */
#ifndef WGT_CPU_RANDOM_H
#define WGT_CPU_RANDOM_H

#include <stdint.h>

#include "cpu/cpu.h"

/* One Philox4x32-10 block: the published function (Salmon et al. 2011, Random123). */
void wgt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* Word j of the seed's stream. */
uint32_t wgt_philox_word(uint64_t seed, uint64_t j);

/* The exact word -> float mappings shared with the kernel. */
static inline float wgt_rand_u01(uint32_t w) { return (float)(w >> 8) * 0x1p-24f; }         /* [0, 1) */
static inline float wgt_rand_u01_open0(uint32_t w) { return (float)((w >> 8) + 1) * 0x1p-24f; } /* (0, 1] */

/* out = the raw words (u32 out; any integer dtype stores them wrapped). */
wgt_status wgt_cpu_random_bits(uint64_t seed, uint64_t block, const wgt_cpu_tensor *out);
/* out = fma(u, scale, lo) in f32, u = wgt_rand_u01(word), rounded to out's float dtype. */
wgt_status wgt_cpu_uniform(uint64_t seed, uint64_t block, float lo, float scale, const wgt_cpu_tensor *out);
/* Box-Muller on the word pairs (4k, 4k+1) and (4k+2, 4k+3) of each block: u1 = u01_open0 of the
 * first, u2 = u01 of the second, r = sqrt(-2 ln u1), t = 2 pi u2 - pi; elements r cos t, r sin t;
 * out = mean + std * z (computed in double here; the kernel's f32 differs by its
 * transcendental error, see test_gpu_random.c). */
wgt_status wgt_cpu_normal(uint64_t seed, uint64_t block, double mean, double std, const wgt_cpu_tensor *out);
/* out = u01(word) < p ? 1 : 0, p from the tensor p (broadcast to out) or, if p is NULL, p_scalar
 * (f32 values). NaN p gives 0. */
wgt_status wgt_cpu_bernoulli(uint64_t seed, uint64_t block, const wgt_cpu_tensor *p, float p_scalar,
                             const wgt_cpu_tensor *out);
/* out = lo + floor(word * range / 2^32) (range = hi - lo in [1, 2^32]; range 2^32 passed as 0),
 * the sum wrapped to 32 bits (i32 for signed outputs, u32 for u32; floats take the i32 value). */
wgt_status wgt_cpu_randint(uint64_t seed, uint64_t block, int64_t lo, uint32_t range, const wgt_cpu_tensor *out);
/* out [n] = a permutation of 0..n-1. n <= WGT_RANDPERM_SHUFFLE_MAX: a Fisher-Yates shuffle of the
 * identity, step k (i = n - 1 - k down to 1) swapping positions i and floor(word k * (i + 1) / 2^32)
 * (uniform over the n! permutations up to a bias below n / 2^32); it draws n words. Larger n: a
 * keyed 6-round Feistel network on 2h bits (the smallest h >= 1 with 4^h > n) whose round function
 * is Philox on the counter (x, block low, block high, 0x80000000 | round), walked until it lands
 * below n; it draws 4 words (the key). */
#define WGT_RANDPERM_SHUFFLE_MAX 2048
wgt_status wgt_cpu_randperm(uint64_t seed, uint64_t block, const wgt_cpu_tensor *out);
/* out [N, S] (or [S] for probs [K]) = category indices drawn from the rows of probs [N, K]
 * (weights: negative and NaN count as 0); sample s of row r takes word r * S + s. With replacement
 * each draw is independent; without, a drawn category's weight becomes 0 for the row's later
 * draws. The draw of u = u01(word) follows the blocked order of the kernel exactly: chunk t of
 * C = ceil(K / 256) weights has the sequential f32 sum T_t; P_t = P_(t-1) + T_t (f32); x = u * P_255;
 * the first chunk with P_t > x, then the first category j in it whose running sum from P_(t-1)
 * exceeds x (or the chunk's last nonzero weight). A row with no weight left gives -1. */
wgt_status wgt_cpu_multinomial(uint64_t seed, uint64_t block, const wgt_cpu_tensor *probs, int replacement,
                               const wgt_cpu_tensor *out);
/* out = x * (u01(word) < keep ? scale : 0) in f32 (x's shape, a float dtype); mask (bool, may be
 * NULL) = the kept elements. */
wgt_status wgt_cpu_dropout(uint64_t seed, uint64_t block, const wgt_cpu_tensor *x, float keep, float scale,
                           const wgt_cpu_tensor *out, const wgt_cpu_tensor *mask);

#endif
