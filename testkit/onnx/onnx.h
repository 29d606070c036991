/* ONNX files for node tests: a bounds-checked protobuf reader for ModelProto (graph, nodes with
 * every attribute type, graph inputs/outputs, initializers) and TensorProto (.pb test data),
 * and the executor that maps one ONNX node onto the CPU reference (onnx_ops.c).
 * A malformed file is a WGT_ERR_FORMAT naming the file and field, never a crash.
 * Tensor payloads are decoded on a little-endian host (the only kind wgt builds for). */
#ifndef WGT_ONNX_ONNX_H
#define WGT_ONNX_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/cpu.h"

/* TensorProto.DataType values. */
enum {
    WGT_ONNX_FLOAT = 1, WGT_ONNX_UINT8 = 2, WGT_ONNX_INT8 = 3, WGT_ONNX_UINT16 = 4,
    WGT_ONNX_INT16 = 5, WGT_ONNX_INT32 = 6, WGT_ONNX_INT64 = 7, WGT_ONNX_STRING = 8,
    WGT_ONNX_BOOL = 9, WGT_ONNX_FLOAT16 = 10, WGT_ONNX_DOUBLE = 11, WGT_ONNX_UINT32 = 12,
    WGT_ONNX_UINT64 = 13, WGT_ONNX_COMPLEX64 = 14, WGT_ONNX_COMPLEX128 = 15, WGT_ONNX_BFLOAT16 = 16,
};

/* A decoded tensor: contiguous data in a wgt dtype, or data NULL when no wgt dtype holds the
 * ONNX type (double, int16, strings, ...): `dtype` is then WGT_DTYPE_COUNT. */
typedef struct wgt_onnx_tensor {
    char *name;
    int onnx_type;              /* TensorProto.DataType */
    wgt_dtype dtype;
    int ndim;
    int64_t dims[WGT_MAX_DIMS];
    int64_t numel;
    void *data;                 /* numel * wgt_dtype_size(dtype) bytes, malloc'd */
    double *f64;                /* DOUBLE tensors only (data NULL): the exact values, for tests that
                                   run them in f32 and compare with the f64 expectation */
} wgt_onnx_tensor;

/* AttributeProto.AttributeType values. */
typedef enum wgt_onnx_attr_type {
    WGT_ONNX_ATTR_UNDEFINED = 0, WGT_ONNX_ATTR_FLOAT = 1, WGT_ONNX_ATTR_INT = 2,
    WGT_ONNX_ATTR_STRING = 3, WGT_ONNX_ATTR_TENSOR = 4, WGT_ONNX_ATTR_GRAPH = 5,
    WGT_ONNX_ATTR_FLOATS = 6, WGT_ONNX_ATTR_INTS = 7, WGT_ONNX_ATTR_STRINGS = 8,
    WGT_ONNX_ATTR_TENSORS = 9, WGT_ONNX_ATTR_GRAPHS = 10,
} wgt_onnx_attr_type;

typedef struct wgt_onnx_attr {
    char *name;
    wgt_onnx_attr_type type;
    double f;
    int64_t i;
    char *s;                    /* NUL-terminated copy (s_len bytes before the NUL) */
    size_t s_len;
    wgt_onnx_tensor *t;         /* TENSOR */
    double *floats;
    int n_floats;
    int64_t *ints;
    int n_ints;
    char **strings;
    int n_strings;
    int n_tensors, n_graphs;    /* TENSORS/GRAPHS are counted, not decoded */
} wgt_onnx_attr;

typedef struct wgt_onnx_node {
    char *op_type, *domain, *name;
    char **inputs;              /* "" for an omitted optional input */
    int n_inputs;
    char **outputs;
    int n_outputs;
    wgt_onnx_attr *attrs;
    int n_attrs;
} wgt_onnx_node;

typedef struct wgt_onnx_model {
    int64_t ir_version;
    int64_t opset;              /* version of the default ("" / "ai.onnx") domain */
    wgt_onnx_node *nodes;
    int n_nodes;
    char **inputs, **outputs;   /* graph input / output names, in order */
    int n_inputs, n_outputs;
    wgt_onnx_tensor *initializers;
    int n_initializers;
} wgt_onnx_model;

/* Parse a ModelProto from memory / a file. what names the source in messages. */
wgt_status wgt_onnx_model_parse(const uint8_t *buf, size_t len, const char *what, wgt_onnx_model **out);
wgt_status wgt_onnx_model_read(const char *path, wgt_onnx_model **out);
void wgt_onnx_model_free(wgt_onnx_model *m);

/* Parse a TensorProto (a test's input_N.pb / output_N.pb). *out is zeroed first. */
wgt_status wgt_onnx_tensor_parse(const uint8_t *buf, size_t len, const char *what, wgt_onnx_tensor *out);
wgt_status wgt_onnx_tensor_read(const char *path, wgt_onnx_tensor *out);
/* Free what a tensor holds (not the struct). */
void wgt_onnx_tensor_clear(wgt_onnx_tensor *t);
/* "FLOAT", "INT64", ... */
const char *wgt_onnx_type_name(int onnx_type);

/* The attribute called name, or NULL. */
const wgt_onnx_attr *wgt_onnx_node_attr(const wgt_onnx_node *n, const char *name);

/* A host view of a decoded tensor (contiguous). */
wgt_cpu_tensor wgt_onnx_tensor_view(const wgt_onnx_tensor *t);

/* ---- Executor (onnx_ops.c) ---------------------------------------------------------------------
 * Maps one node onto the CPU reference's functions (src/cpu/cpu.h), on host tensors, and runs each
 * through a backend: a function from a reference to what runs it. wgt_onnx_cpu_backend answers
 * with the reference itself; the GPU backend (onnx_gpu.h) with the reference's device adapter
 * (named in the op table's onnx column: uploads, runs the op API, reads back), and so runs every
 * ONNX node test through the GPU ops. A reference with no adapter makes the nodes that need it
 * WGT_ERR_UNSUPPORTED (never a silent fallback). */
typedef void (*wgt_onnx_fn)(void); /* any function; cast back to the reference's type to call */
typedef struct wgt_onnx_backend {
    const char *name;
    /* What runs reference on this backend: a function of the reference's type, or NULL. */
    wgt_onnx_fn (*fn_for)(wgt_onnx_fn reference);
} wgt_onnx_backend;

extern const wgt_onnx_backend wgt_onnx_cpu_backend;

/* Runs one node on backend (NULL: the CPU reference): inputs[i] is the tensor for node input i
 * (NULL for an omitted optional input). Outputs are allocated by the executor (contiguous,
 * malloc'd data; wgt_onnx_tensor_clear them). WGT_ERR_UNSUPPORTED with a message for an op,
 * attribute or dtype it does not map. */
wgt_status wgt_onnx_run_node(const wgt_onnx_backend *backend, const wgt_onnx_node *node, int64_t opset,
                             const wgt_onnx_tensor *const *inputs, int n_inputs,
                             wgt_onnx_tensor *outputs, int n_outputs);
/* 1 if the executor knows op_type at all (a finer check happens when running). */
int wgt_onnx_op_known(const char *op_type);

/* ---- Node-test runner (onnx_runner.c) ------------------------------------------------------- */

typedef enum wgt_onnx_result { WGT_ONNX_PASS = 0, WGT_ONNX_FAIL = 1, WGT_ONNX_NA = 2 } wgt_onnx_result;

/* Run the node test in dir (model.onnx and test_data_set_N/) on backend (NULL: the reference):
 * PASS, FAIL (why: the worst element or the error) or NA (why: the op, attribute or type that is
 * not mapped). Graphs of several nodes (the "_expanded" tests) run node by node. op gets the
 * node's op_type, or "(multi-node graph)". Not reentrant (the value table is static). DOUBLE data runs in f32 (why
 * says so on a PASS). Tolerances are per op (wgt_onnx_tolerance), times tol_scale. */
wgt_onnx_result wgt_onnx_run_test(const char *dir, const wgt_onnx_backend *backend, double tol_scale,
                                  char *op, size_t op_size, char *why, size_t why_size);
/* The tolerance the runner applies to op_type's float outputs, and why (f16/bf16 outputs get at
 * least 4e-3 relative). */
void wgt_onnx_tolerance(const char *op_type, double *rtol, double *atol, const char **why);

#endif
