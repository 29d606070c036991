/* The loss-curve chart of `wgt train` (tools/train_svg.c). */
#ifndef WGT_TOOLS_TRAIN_SVG_H
#define WGT_TOOLS_TRAIN_SVG_H

#include <stdint.h>

#include "wgt.h"

/* loss[i] is the loss of step i + 1; eval_loss[i] was measured after step eval_step[i]. 0 on
 * success, -1 with wgt_errmsg() set. */
int train_write_svg(const char *path, const double *loss, int64_t n, const int64_t *eval_step,
                    const double *eval_loss, int64_t n_eval, const char *title);

#endif
