/* TEMPORARY declarations of ops the model uses, until they land in src/ops/api.h. */
#include "cpu/cpu.h"
wgt_status wgt_rms_norm(const wgt_tensor *x, int nd, const wgt_tensor *w, double eps, wgt_tensor **out);
wgt_status wgt_layer_norm(const wgt_tensor *x, int nd, const wgt_tensor *w, const wgt_tensor *b, double eps, wgt_tensor **out);
wgt_status wgt_linear(const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *b, wgt_tensor **out);
wgt_status wgt_rope(const wgt_tensor *x, const wgt_tensor *pos, int rot, int inter, const wgt_rope_params *p, wgt_tensor **out);
wgt_status wgt_sdpa(const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v, const wgt_tensor *mask,
                    const wgt_sdpa_params *p, wgt_tensor **out);
wgt_status wgt_embedding(const wgt_tensor *w, const wgt_tensor *ids, wgt_tensor **out);
wgt_status wgt_reduce(wgt_reduce_op op, const wgt_tensor *x, uint32_t dims, int keepdim, double corr, wgt_tensor **out);
