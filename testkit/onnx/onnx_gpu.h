/* The ONNX executor on a device: a wgt_onnx_backend (onnx.h) that runs each CPU reference the
 * executor calls through its device adapter (named in the op table's onnx column; defined in
 * onnx_gpu.c), which uploads the host tensors, runs the wgt op (wgt_unary, wgt_binary, ...) on the
 * context and reads the result back, so the ONNX node tests check the GPU kernels against ONNX's
 * expected outputs. A reference without an adapter makes its nodes N/A, never a silent run of
 * the reference. */
#ifndef WGT_ONNX_ONNX_GPU_H
#define WGT_ONNX_ONNX_GPU_H

#include "onnx/onnx.h"

/* Fill *out with the backend for ctx. The backend keeps ctx (one device backend per process at a
 * time: the table's members take no context); ctx must outlive its use. */
void wgt_onnx_gpu_backend(wgt_context *ctx, wgt_onnx_backend *out);

#endif
