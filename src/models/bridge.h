/* The ops the model layer calls, behind one seam: until the GPU kernels of these ops land in
 * src/ops/ (rms_norm, layer_norm, linear, rope, sdpa, embedding, reductions are being written),
 * they run the C reference through op_reference (on a GPU context: download, compute, upload).
 * Correct and slow; each becomes a one-line call of the real op when it lands. */
#ifndef WGT_MODELS_BRIDGE_H
#define WGT_MODELS_BRIDGE_H

#include "cpu/cpu.h"
wgt_status mdl_rms_norm(const wgt_tensor *x, int nd, const wgt_tensor *w, double eps, wgt_tensor **out);
wgt_status mdl_layer_norm(const wgt_tensor *x, int nd, const wgt_tensor *w, const wgt_tensor *b, double eps, wgt_tensor **out);
wgt_status mdl_linear(const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *b, wgt_tensor **out);
wgt_status mdl_rope(const wgt_tensor *x, const wgt_tensor *pos, int rot, int inter, const wgt_rope_params *p, wgt_tensor **out);
wgt_status mdl_sdpa(const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v, const wgt_tensor *mask,
                    const wgt_sdpa_params *p, wgt_tensor **out);
wgt_status mdl_embedding(const wgt_tensor *w, const wgt_tensor *ids, wgt_tensor **out);
wgt_status mdl_reduce(wgt_reduce_op op, const wgt_tensor *x, uint32_t dims, int keepdim, double corr, wgt_tensor **out);

#endif
