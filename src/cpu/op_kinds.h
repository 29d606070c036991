/* The op kinds (wgt_unary_op, wgt_binary_op, ...) are public: they live in include/wgt.h. This
 * header stays for the code that includes it; op_kinds.c holds their name tables. */
#ifndef WGT_CPU_OP_KINDS_H
#define WGT_CPU_OP_KINDS_H

#include "wgt.h"

#endif
