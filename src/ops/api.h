/* The op functions are public: they live in include/wgt.h. This header stays for the code that
 * includes it (with the CPU reference beside them). */
#ifndef WGT_OPS_API_H
#define WGT_OPS_API_H

#include "cpu/cpu.h"
#include "ops/fused.h" /* the decode step's fused kernels: internal, not in wgt.h */
#include "wgt.h"

#endif
