/* Tensor-core products with fragments loaded from storage (matmul_tcd.c, src/kernels/
 * matmul_tcd.wgsl): matmul.c's core hands a product here when op_matmul_tcd_take says so. */
#ifndef WGT_OPS_MATMUL_TCD_H
#define WGT_OPS_MATMUL_TCD_H

#include "ops/matmul_fuse.h"
#include "ops/ops.h"

/* 1 when a product of M x N over K (batch 1) with operand dtypes da, db runs here: the device has
 * 16x16x16 f16 x f16 -> f32 subgroup matrices, M is past decode's sizes, and WGT_MATMUL_TCD's
 * policy takes it (half: an f16 or bf16 operand; all: f32 products too). */
int op_matmul_tcd_take(wgt_context *ctx, int64_t M, int64_t N, int64_t K, wgt_dtype da, wgt_dtype db);

/* The product p (mm_params with element offsets and strides of A, B and C relative to bind[0..2];
 * out: bind[3], f32, element m * p->ldo + p->n0 + n) with A of dtype da, B db, C dc. Operands that
 * are not f16 rows along k holding whole tiles are first copied so (matmul_half.wgsl). */
wgt_status op_matmul_tcd(wgt_context *ctx, const mm_params *p, const wgt_binding bind[4], wgt_dtype da, wgt_dtype db,
                         wgt_dtype dc);

/* The first lines of a subgroup-matrix tile kernel's prelude (matmul_tcd.wgsl, matmul_tcq.wgsl)
 * into pre (cap bytes): the enables (without subgroup matrices where emu) and the constants SGS, SGR,
 * SGC (subgroups: invocations, rows, columns), FM, FN (fragments a subgroup) and SM = SN = SK = frag.
 * 0 where it does not fit. */
int op_tc_prelude_head(char *pre, size_t cap, int emu, int sgs, int sgr, int sgc, int fm, int fn, int frag);

#endif
