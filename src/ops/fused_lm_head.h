/*
 * The output layer of a decode token with the greedy argmax folded into it (src/ops/fused_lm_head.c,
 * src/kernels/fused_lm_head.wgsl + fused_lm_head_argmax.wgsl). Not public API: it exists for the decoder
 * (src/models/forward.c) and the bench program bench/lm_head.c, and may change with them.
 */
#ifndef WGT_OPS_FUSED_LM_HEAD_H
#define WGT_OPS_FUSED_LM_HEAD_H

#include "gpu/gpu.h"
#include "wgt.h"

/* *logits [1, N] = (rms_norm(x) * gamma) @ w^T for one token x [1, K] (f32) and w [N, K] (type
 * WGT_FTYPE_F32: a f32, f16 or bf16 tensor; else GGUF blocks as wgt_qlinear takes them; gamma
 * NULL: x itself, eps unused), and, with token non-NULL, *token [1] (i32) = the first index of the
 * largest logit (NaN the largest, as wgt_reduce's argmax): one pass over the weights whose
 * workgroups also keep their best logit, then one workgroup over those. Anything the kernel does
 * not take (blocks other than Q8_0 / Q4_0, a CPU-reference context, WGT_LM_HEAD=0, ...) composes
 * wgt_fused_linear / wgt_fused_qlinear and wgt_reduce's argmax. */
wgt_status wgt_lm_head(const wgt_tensor *x, const wgt_tensor *gamma, double eps, const wgt_tensor *w, wgt_ftype type,
                       wgt_tensor **logits, wgt_tensor **token);

#endif
