/*
 * Tensors: a handle over (storage, layout). Storage is reference-counted and shared by views.
 * On a GPU context the storage is a pooled device buffer; on a CPU context (WGT_BACKEND=cpu) it is
 * host memory and every op runs the reference in src/cpu/. Either way the same op functions apply.
 */
#ifndef WGT_TENSOR_TENSOR_H
#define WGT_TENSOR_TENSOR_H

#include "core/layout.h"
#include "gpu/gpu.h"

typedef struct wgt_storage {
    wgt_context *ctx;
    int refs;
    uint64_t bytes;    /* usable bytes (a multiple of 4) */
    wgt_buffer *buf;   /* GPU context */
    void *host;        /* CPU context */
    uint64_t version;  /* in-place writes so far (wgt_tensor_assign, an optimizer step): autograd
                        * checks that a tensor saved for backward was not written since (PyTorch's
                        * version counter, shared by every view of the storage) */
} wgt_storage;

/* Autograd's state of a tensor (src/autograd; opaque here): requires_grad, .grad, the graph node
 * that made it. Handles made by wgt_tensor_ref share it (they are the same tensor); views and
 * every other op result get their own when autograd records them. NULL when autograd never
 * touched the tensor. */
struct ag_meta;

struct wgt_tensor {
    wgt_storage *st;
    wgt_layout l;
    struct ag_meta *ag;
};

/* Installed by src/autograd before it creates any ag_meta (the tensor layer cannot call upward). */
extern void (*wgt_tensor_ag_retain)(struct ag_meta *m);
extern void (*wgt_tensor_ag_release)(struct ag_meta *m);

/* A new contiguous tensor with uninitialised contents. */
wgt_status wgt_tensor_new(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, wgt_tensor **out);
/* A new tensor sharing t's storage with another layout (a view). */
wgt_status wgt_tensor_new_view(const wgt_tensor *t, const wgt_layout *l, wgt_tensor **out);

/* Bytes of storage a layout reaches: (offset + max index + 1) elements, rounded up to 4 bytes. */
uint64_t wgt_layout_extent_bytes(const wgt_layout *l);

/* reshape's view half: *out is a view of t with the shape given (an error for a bad shape), or
 * NULL when t's strides admit no such view and a copy must be made (wgt_tensor_reshape in
 * src/ops does that: copying is an op, and this layer calls none). */
wgt_status wgt_tensor_reshape_view(const wgt_tensor *t, int ndim, const int64_t *shape, wgt_tensor **out);

#endif
