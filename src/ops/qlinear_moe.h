/* The experts of a mixture of experts with quantized weights: only the chosen experts' blocks are
 * read, in place (src/ops/qlinear_moe.c, src/kernels/qlinear_moe.wgsl). One token (decode):
 * wgt_moe_gate_up, wgt_moe_down. Many (prefill): the (token, slot) pairs grouped by expert
 * (wgt_moe_groups), then wgt_moe_gate_up_grouped, wgt_moe_down_grouped. */
#ifndef WGT_OPS_QLINEAR_MOE_H
#define WGT_OPS_QLINEAR_MOE_H

#include "wgt.h"

/* 1 when wgt_moe_gate_up / wgt_moe_down run their kernels for experts of intermediate size F
 * stacked in gu [2 E F rows, D] and down [D, E F] (u8 blocks of gu_type / down_type, as
 * wgt_qweight_upload makes them): formats qlinear reads on the GPU whose blocks divide F, D a
 * multiple of 32, each weight within one storage binding and 32-bit byte offsets (on a CPU
 * reference context: formats the host dequantises). */
int wgt_moe_q_fits(wgt_context *ctx, const wgt_tensor *gu, wgt_ftype gu_type, const wgt_tensor *down,
                   wgt_ftype down_type, int64_t E, int64_t F);

/* *act [K F] f32: act[k F + j] = silu(gate_e . x)[j] * (up_e . x)[j] for e = ids[k], where expert
 * e's gate rows are gu's rows e F .. e F + F - 1 and its up rows E F + e F ..; x [1, D] or [D] f32,
 * ids [K] i32 (on the device: the router's top k; an id past E - 1 reads expert E - 1). */
wgt_status wgt_moe_gate_up(const wgt_tensor *x, const wgt_tensor *gu, wgt_ftype type, int64_t E, int64_t F,
                           const wgt_tensor *ids, wgt_tensor **act);

/* *y [1, D] f32 = sum_k wts[k] * down_e act[k] for e = ids[k], where down_e is down's columns
 * e F .. e F + F - 1; act [K F] f32 (wgt_moe_gate_up's), ids [K] i32, wts [K] f32. */
wgt_status wgt_moe_down(const wgt_tensor *act, const wgt_tensor *down, wgt_ftype type, int64_t E, int64_t F,
                        const wgt_tensor *ids, const wgt_tensor *wts, wgt_tensor **y);

/* ---- many tokens, grouped by expert ---- */

/* 1 when the grouped ops run their kernels for L tokens of K chosen experts (wgt_moe_q_fits's
 * conditions, the [L K, F] and [L K, D] rows within a binding, E within a grid dimension; any
 * shape on a CPU reference context). */
int wgt_moe_q_grouped_fits(wgt_context *ctx, const wgt_tensor *gu, wgt_ftype gu_type, const wgt_tensor *down,
                           wgt_ftype down_type, int64_t E, int64_t F, int64_t L, int64_t K);

/* *groups i32 [E + 1 + L K] of the router's ids [L, K] (i32, on the device; values in 0 .. E - 1):
 * off [E + 1] (expert e's pairs are sorted positions off[e] .. off[e + 1] - 1), then order [L K]
 * (the pair token * K + slot at each sorted position, by expert, stable). On the device: a stable
 * sort, a searchsorted and a cat, no host round trip. */
wgt_status wgt_moe_groups(const wgt_tensor *ids, int64_t E, wgt_tensor **groups);

/* *act [L K, F] f32: row token * K + slot = silu(gate_e x[token]) * (up_e x[token]), e the expert of
 * that pair; x [L, D] f32, gu as wgt_moe_gate_up's, groups wgt_moe_groups'. Each expert's rows
 * are read once per tile of its pairs, never for a token that did not choose it. */
wgt_status wgt_moe_gate_up_grouped(const wgt_tensor *x, const wgt_tensor *gu, wgt_ftype type, int64_t E, int64_t F,
                                   int64_t K, const wgt_tensor *groups, wgt_tensor **act);

/* *y [L, D] f32: y[token] = sum_slot wts[token, slot] * down_e act[token * K + slot]; act [L K, F]
 * (wgt_moe_gate_up_grouped's), down as wgt_moe_down's, wts [L, K] f32. */
wgt_status wgt_moe_down_grouped(const wgt_tensor *act, const wgt_tensor *down, wgt_ftype type, int64_t E, int64_t F,
                                int64_t K, const wgt_tensor *groups, const wgt_tensor *wts, wgt_tensor **y);

#endif
