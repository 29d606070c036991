/* Routing a captured one-token step's plain ops to the decoder's fused kernels (fused_route.c). */
#ifndef WGT_OPS_FUSED_ROUTE_H
#define WGT_OPS_FUSED_ROUTE_H

#include "gpu/gpu.h"

/* WGT_GRAPH_ROUTE unset: this (1 on, 0 off). On: on the H200 (Qwen2.5-0.5B f16 decode, three
 * rounds, bench/results/h200/graph-route-2026-12-03/) the plain-op step captured took 1.543 /
 * 1.533 / 1.531 ms a token routed against 2.162 / 2.164 / 2.187 without (the hand-fused step
 * captured 1.508 / 1.510 / 1.515, eager 1.489). */
#define FR_ROUTE_DEFAULT 1

/* 1 when the routing runs (WGT_GRAPH_ROUTE=1, or the default). */
int fr_route_on(void);
/* The rewrite (run by ew_fuse_graph): rms_norm + product (+ the rotation and cache writes),
 * silu * mul + product (+ residual add), product + residual add, each become the one dispatch of
 * fused_linear.wgsl / fused_linear_qkv_rope.wgsl that wgt_fused_linear /
 * wgt_fused_qkv_rope_cache would make. */
wgt_status fr_route_graph(wgt_context *ctx, wgt_gpu_graph *g);

#endif
