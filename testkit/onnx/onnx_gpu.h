/* The ONNX executor on a device: a wgt_onnx_backend (onnx.h) whose members upload their host
 * tensors, run the wgt op (wgt_unary, wgt_binary, ...) on the context and read the result back, so
 * the ONNX node tests check the GPU kernels against ONNX's expected outputs. Members for ops that
 * have no op API yet stay NULL: their nodes are N/A, never a silent run of the reference. */
#ifndef WGT_ONNX_ONNX_GPU_H
#define WGT_ONNX_ONNX_GPU_H

#include "onnx/onnx.h"

/* Fill *out with the backend for ctx. The backend keeps ctx (one device backend per process at a
 * time: the table's members take no context); ctx must outlive its use. */
void wgt_onnx_gpu_backend(wgt_context *ctx, wgt_onnx_backend *out);

#endif
