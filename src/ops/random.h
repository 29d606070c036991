/* Internal to the random ops and their tests (the public functions are in include/wgt.h). */
#ifndef WGT_OPS_RANDOM_H
#define WGT_OPS_RANDOM_H

#include <stdint.h>

#include "wgt.h"

/* One Philox4x32-10 block at an arbitrary counter and key, computed by the kernel on ctx's adapter
 * (by the reference on a CPU context): the known-answer test of the GPU code. */
wgt_status wgt_random_block(wgt_context *ctx, const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

#endif
