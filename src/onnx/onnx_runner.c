/* Runs one ONNX node test directory (model.onnx + test_data_set_N/{input,output}_K.pb) through
 * the executor on a backend and compares with the expected outputs: the engine behind
 * tests/cpu/test_cpu_onnx and the CLI's onnx-test. */
#include "onnx/onnx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"

#define MAX_IO 64

/* Tolerances per op, with the reason. Expected outputs come from NumPy, mostly computed in f32
 * (each step rounded); the reference computes in double and rounds once, so results differ by a
 * few f32 ulps on transcendental functions and more where NumPy accumulates in f32. */
typedef struct tol {
    const char *op;
    double rtol, atol;
    const char *why;
} tol;

static const tol tols[] = {
    {"MatMul", 1e-5, 1e-5, "f32 dot products accumulated in NumPy vs double here"},
    {"Gemm", 1e-5, 1e-5, "f32 dot products accumulated in NumPy vs double here"},
    {"ReduceSum", 1e-5, 1e-5, "f32 pairwise sums in NumPy vs double here"},
    {"ReduceMean", 1e-5, 1e-5, "f32 pairwise sums in NumPy vs double here"},
    {"ReduceProd", 1e-5, 1e-6, "f32 products in NumPy"},
    {"ReduceL1", 1e-5, 1e-5, "f32 sums in NumPy"},
    {"ReduceL2", 1e-5, 1e-5, "f32 sums of squares in NumPy"},
    {"ReduceSumSquare", 1e-5, 1e-5, "f32 sums of squares in NumPy"},
    {"ReduceLogSum", 1e-5, 1e-5, "f32 sums then log in NumPy"},
    {"ReduceLogSumExp", 1e-5, 1e-5, "f32 exp/sum/log in NumPy, without max subtraction"},
    {"Softmax", 1e-5, 1e-6, "f32 exp and sum in NumPy"},
    {"LogSoftmax", 1e-5, 1e-5, "f32 exp, sum and log in NumPy"},
    {"LayerNormalization", 1e-4, 1e-5, "f32 mean/variance in NumPy"},
    {"BatchNormalization", 1e-5, 1e-5, "f32 steps in NumPy"},
    {"InstanceNormalization", 1e-4, 1e-5, "f32 mean/variance in NumPy"},
    {"CumSum", 1e-5, 1e-5, "f32 running sums in NumPy"},
    {"Mean", 1e-6, 1e-7, "f32 sum then division in NumPy"},
    {"Pow", 1e-5, 1e-6, "f32 pow in NumPy"},
};
static const tol default_tol = {"", 2e-6, 1e-7, "NumPy's f32 functions are within a few ulps"};

static const tol *tol_for(const char *op)
{
    for (size_t i = 0; i < sizeof tols / sizeof *tols; i++)
        if (!strcmp(tols[i].op, op)) return &tols[i];
    return &default_tol;
}

#define PASS WGT_ONNX_PASS
#define FAIL WGT_ONNX_FAIL
#define NA WGT_ONNX_NA

/* Compare got with want; on mismatch write a description into why. Returns PASS/FAIL/NA. */
static wgt_onnx_result compare(const wgt_onnx_tensor *got, const wgt_onnx_tensor *want, const tol *t, double scale,
                   char *why, size_t n)
{
    /* A DOUBLE expectation is compared with the f32 result of the narrowed run. */
    int narrowed = !want->data && want->f64 && got->dtype == WGT_F32;
    if (!want->data && !narrowed) {
        snprintf(why, n, "expected output of type %s, which no wgt dtype holds", wgt_onnx_type_name(want->onnx_type));
        return NA;
    }
    if (!narrowed && got->dtype != want->dtype) {
        snprintf(why, n, "dtype %s, expected %s", wgt_dtype_name(got->dtype), wgt_dtype_name(want->dtype));
        return FAIL;
    }
    int same = got->ndim == want->ndim;
    for (int d = 0; same && d < got->ndim; d++) same = got->dims[d] == want->dims[d];
    if (!same) {
        snprintf(why, n, "shape differs (rank %d vs %d, %lld vs %lld elements)", got->ndim, want->ndim,
                 (long long)got->numel, (long long)want->numel);
        return FAIL;
    }
    wgt_cpu_tensor g = wgt_onnx_tensor_view(got), w = narrowed ? g : wgt_onnx_tensor_view(want);
    int is_f = wgt_cpu_is_float(got->dtype);
    double rtol = t->rtol * scale, atol = t->atol * scale;
    if (got->dtype == WGT_F16 || got->dtype == WGT_BF16) rtol = rtol > 4e-3 ? rtol : 4e-3, atol = atol > 1e-3 ? atol : 1e-3;
    if (narrowed) rtol = rtol > 1e-5 ? rtol : 1e-5, atol = atol > 1e-6 ? atol : 1e-6; /* f32 inputs */
    double worst = 0;
    int64_t worst_i = -1;
    for (int64_t i = 0; i < got->numel; i++) {
        if (!is_f) {
            if (wgt_cpu_load_i(&g, i) != wgt_cpu_load_i(&w, i)) {
                snprintf(why, n, "element %lld is %lld, expected %lld", (long long)i,
                         (long long)wgt_cpu_load_i(&g, i), (long long)wgt_cpu_load_i(&w, i));
                return FAIL;
            }
            continue;
        }
        double a = wgt_cpu_load_f(&g, i), b = narrowed ? want->f64[i] : wgt_cpu_load_f(&w, i);
        if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) {
            if ((isnan(a) && isnan(b)) || a == b) continue;
            snprintf(why, n, "element %lld is %g, expected %g", (long long)i, a, b);
            return FAIL;
        }
        double lim = atol + rtol * fabs(b), diff = fabs(a - b);
        double err = diff == 0 ? 0 : lim > 0 ? diff / lim : INFINITY;
        if (err > worst) worst = err, worst_i = i;
    }
    if (worst > 1) {
        snprintf(why, n, "element %lld is %.9g, expected %.9g (%.2fx the tolerance)", (long long)worst_i,
                 wgt_cpu_load_f(&g, worst_i), narrowed ? want->f64[worst_i] : wgt_cpu_load_f(&w, worst_i), worst);
        return FAIL;
    }
    return PASS;
}

/* wgt has no f64: run a DOUBLE input as f32 (rounded) so the op's semantics are still checked. */
static int narrow_to_f32(wgt_onnx_tensor *t)
{
    if (t->data || !t->f64) return 0;
    float *f = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
    if (!f) return 0;
    for (int64_t i = 0; i < t->numel; i++) f[i] = (float)t->f64[i];
    t->data = f;
    t->dtype = WGT_F32;
    return 1;
}

static int is_dir(const char *p)
{
    struct stat s;
    return stat(p, &s) == 0 && S_ISDIR(s.st_mode);
}

/* Run one test directory. */
wgt_onnx_result wgt_onnx_run_test(const char *dir, const wgt_onnx_backend *backend, double tol_scale,
                                  char *op_out, size_t op_size, char *why, size_t n)
{
    char path[8400];
    wgt_onnx_model *m = NULL;
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    snprintf(op_out, op_size, "(unreadable)");
    why[0] = 0;
    wgt_status st = wgt_onnx_model_read(path, &m);
    if (st) {
        snprintf(why, n, "model: %s", wgt_errmsg());
        return st == WGT_ERR_UNSUPPORTED ? NA : FAIL;
    }
    wgt_onnx_result result = PASS;
    if (m->n_nodes != 1) {
        snprintf(op_out, op_size, "(%d-node graph)", m->n_nodes);
        snprintf(why, n, "a graph of %d nodes, not a single-node test", m->n_nodes);
        wgt_onnx_model_free(m);
        return NA;
    }
    const wgt_onnx_node *node = &m->nodes[0];
    snprintf(op_out, op_size, "%s", node->op_type);
    if (!wgt_onnx_op_known(node->op_type)) {
        snprintf(why, n, "no reference op for %s", node->op_type);
        wgt_onnx_model_free(m);
        return NA;
    }
    /* Graph inputs fed by the test data: those that are not initializers, in order. */
    int feed[MAX_IO], n_feed = 0;
    for (int i = 0; i < m->n_inputs && n_feed < MAX_IO; i++) {
        int init = 0;
        for (int j = 0; j < m->n_initializers; j++)
            if (m->initializers[j].name && !strcmp(m->initializers[j].name, m->inputs[i])) init = 1;
        if (!init) feed[n_feed++] = i;
    }
    int sets = 0, narrowed = 0;
    for (int s = 0; result == PASS; s++) {
        char set[8300];
        snprintf(set, sizeof set, "%s/test_data_set_%d", dir, s);
        if (!is_dir(set)) break;
        sets++;
        wgt_onnx_tensor given[MAX_IO] = {{0}}, want[MAX_IO] = {{0}}, got[MAX_IO] = {{0}};
        const wgt_onnx_tensor *args[MAX_IO] = {0};
        int n_given = 0, n_want = 0;
        for (int k = 0; k < n_feed; k++) {
            snprintf(path, sizeof path, "%s/input_%d.pb", set, k);
            if (wgt_onnx_tensor_read(path, &given[k])) {
                snprintf(why, n, "input %d: %s", k, wgt_errmsg());
                result = NA; /* sequences and optionals are not TensorProtos */
                break;
            }
            n_given = k + 1;
            if (strcmp(node->op_type, "Cast") && strcmp(node->op_type, "CastLike"))
                narrowed |= narrow_to_f32(&given[k]);
        }
        for (int k = 0; result == PASS && k < m->n_outputs && k < MAX_IO; k++) {
            snprintf(path, sizeof path, "%s/output_%d.pb", set, k);
            if (wgt_onnx_tensor_read(path, &want[k])) {
                snprintf(why, n, "output %d: %s", k, wgt_errmsg());
                result = NA;
                break;
            }
            n_want = k + 1;
        }
        /* Bind node inputs by name to fed inputs or initializers. */
        for (int i = 0; result == PASS && i < node->n_inputs && i < MAX_IO; i++) {
            const char *nm = node->inputs[i];
            if (!nm[0]) continue;
            for (int k = 0; k < n_given; k++)
                if (!strcmp(m->inputs[feed[k]], nm)) args[i] = &given[k];
            for (int j = 0; !args[i] && j < m->n_initializers; j++)
                if (m->initializers[j].name && !strcmp(m->initializers[j].name, nm)) args[i] = &m->initializers[j];
            if (!args[i]) {
                snprintf(why, n, "node input '%s' has no data", nm);
                result = FAIL;
            }
        }
        if (result == PASS) {
            int n_out = node->n_outputs < MAX_IO ? node->n_outputs : MAX_IO;
            st = wgt_onnx_run_node(backend, node, m->opset, args, node->n_inputs, got, n_out);
            if (st == WGT_ERR_UNSUPPORTED) {
                snprintf(why, n, "%s", wgt_errmsg());
                result = NA;
            } else if (st) {
                snprintf(why, n, "run: %s: %s", wgt_status_str(st), wgt_errmsg());
                result = FAIL;
            }
            for (int k = 0; result == PASS && k < m->n_outputs && k < n_want; k++) {
                int o = -1;
                for (int j = 0; j < n_out; j++)
                    if (!strcmp(node->outputs[j], m->outputs[k])) o = j;
                if (o < 0 || !got[o].data) {
                    snprintf(why, n, "output '%s' not produced", m->outputs[k]);
                    result = FAIL;
                    break;
                }
                char w[512];
                wgt_onnx_result r = compare(&got[o], &want[k], tol_for(node->op_type), tol_scale, w, sizeof w);
                if (r != PASS) {
                    snprintf(why, n, "set %d output %d: %s", s, k, w);
                    result = r;
                }
            }
            for (int k = 0; k < n_out; k++) wgt_onnx_tensor_clear(&got[k]);
        }
        for (int k = 0; k < MAX_IO; k++) wgt_onnx_tensor_clear(&given[k]), wgt_onnx_tensor_clear(&want[k]);
    }
    if (result == PASS && sets == 0) {
        snprintf(why, n, "no test_data_set_N directory");
        result = NA;
    }
    if (result == PASS && narrowed) snprintf(why, n, "DOUBLE data run in f32 (wgt has no f64)");
    wgt_onnx_model_free(m);
    return result;
}

void wgt_onnx_tolerance(const char *op_type, double *rtol, double *atol, const char **why)
{
    const tol *t = tol_for(op_type);
    *rtol = t->rtol, *atol = t->atol;
    if (why) *why = t->why;
}
