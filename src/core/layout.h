/* The layout of a tensor's elements in its storage: shape, strides and offset, all in elements.
 * Shared by the GPU path and the CPU reference, so both read the same views. */
#ifndef WGT_CORE_LAYOUT_H
#define WGT_CORE_LAYOUT_H

#include <stdint.h>

#include "wgt.h"

#define WGT_MAX_DIMS 8

typedef struct wgt_layout {
    wgt_dtype dtype;
    int ndim;                       /* 0 for a scalar */
    int64_t shape[WGT_MAX_DIMS];    /* sizes, outermost first */
    int64_t strides[WGT_MAX_DIMS];  /* in elements, >= 0; 0 on broadcast dimensions */
    int64_t offset;                 /* in elements, from the start of the storage */
} wgt_layout;

/* Number of elements (1 for a scalar, 0 if any dimension is 0). */
int64_t wgt_layout_numel(const wgt_layout *l);
/* Fill a contiguous (row-major) layout. */
void wgt_layout_contiguous(wgt_layout *l, wgt_dtype dtype, int ndim, const int64_t *shape);
/* 1 if the elements are dense and in row-major order from offset. */
int wgt_layout_is_contiguous(const wgt_layout *l);
/* Element index in storage of the i-th element in row-major order. */
int64_t wgt_layout_index(const wgt_layout *l, int64_t i);

#endif
