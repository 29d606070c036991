/* libFuzzer target: the ONNX protobuf reader of the test kit (testkit/onnx/onnx_reader.c): the
 * first byte picks a model (ModelProto) or a tensor (TensorProto, as the node tests' .pb files);
 * the rest is the message. */
#include <stdint.h>

#include "onnx/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    if (data[0] & 1) {
        wgt_onnx_model *m;
        if (wgt_onnx_model_parse(data + 1, size - 1, "fuzz.onnx", &m) == WGT_OK) wgt_onnx_model_free(m);
    } else {
        wgt_onnx_tensor t;
        if (wgt_onnx_tensor_parse(data + 1, size - 1, "fuzz.pb", &t) == WGT_OK) wgt_onnx_tensor_clear(&t);
    }
    return 0;
}
