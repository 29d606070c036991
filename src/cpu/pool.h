/* The CPU reference of pooling and resampling (pool.c, resample.c): PyTorch's semantics, over the
 * last 1 or 2 dims of any strided layout, every leading dim a batch dim. Geometry (kernel, stride,
 * padding, output sizes) is resolved by src/ops/pool.c and resample.c; these functions take the
 * output tensors already shaped. Not part of cpu.h: only the op files and the ONNX runner use it. */
#ifndef WGT_CPU_POOL_H
#define WGT_CPU_POOL_H

#include "cpu/cpu.h"

typedef enum wgt_cpu_pool_kind {
    WGT_CPU_POOL_MAX = 0,
    WGT_CPU_POOL_AVG,
    WGT_CPU_POOL_ADAPTIVE_MAX,
    WGT_CPU_POOL_ADAPTIVE_AVG,
} wgt_cpu_pool_kind;

/* Per spatial dim (index 0 the outer one; a 1-D pool uses index 1 only, as an [1, W] plane):
 * kernel, stride, padding and dilation all >= 1 (padding >= 0); adaptive pools use none of them. */
typedef struct wgt_cpu_pool_geom {
    wgt_cpu_pool_kind kind;
    int spatial;              /* 1 or 2 */
    int64_t k[2], s[2], p[2], d[2];
    int count_include_pad;
    int64_t divisor;          /* > 0: divisor_override */
} wgt_cpu_pool_geom;

/* x [..., *S], out [..., *O] (same leading dims), indices (i32 or i64, out's shape, may be NULL):
 * flat positions within one [*S] plane. Max: NaN wins, the last NaN's index (PyTorch's rule). */
wgt_status wgt_cpu_pool(const wgt_cpu_pool_geom *g, const wgt_cpu_tensor *x, const wgt_cpu_tensor *out,
                        const wgt_cpu_tensor *indices);

/* The f32 scale PyTorch's source index uses for a dim (area_pixel_compute_scale): align_corners
 * (S - 1) / (O - 1) (0 for O <= 1), else 1 / scale when scale > 0, else S / O. */
float wgt_cpu_interp_scale(int64_t in, int64_t out, double scale, int align_corners);

/* The weights of one spatial dim of interpolate as a dense matrix A [out, in] (a row's taps, clamped
 * indices adding up), for interpolate's backward: interpolate is separable, y = A_h x A_w^T. */
void wgt_cpu_interp_matrix(wgt_interp_mode mode, int64_t in, int64_t out, double scale, int align_corners, float *A);

/* x [..., *S] -> out [..., *O], spatial 1 or 2; scales per spatial dim (entry <= 0 or NULL: S / O). */
wgt_status wgt_cpu_interpolate(const wgt_cpu_tensor *x, int spatial, wgt_interp_mode mode, const double *scales,
                               int align_corners, const wgt_cpu_tensor *out);

/* x [N, C, H, W], grid [N, Ho, Wo, 2], out [N, C, Ho, Wo]. */
wgt_status wgt_cpu_grid_sample(const wgt_cpu_tensor *x, const wgt_cpu_tensor *grid, wgt_grid_mode mode,
                               wgt_grid_padding padding, int align_corners, const wgt_cpu_tensor *out);

#endif
