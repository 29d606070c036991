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
    {"Resize", 1e-5, 1e-6, "source coordinates and cubic weights in f32 as PyTorch; ONNX's reference uses double"},
    {"GridSample", 2e-6, 5e-5, "ONNX's GridSample test outputs are written to 4 decimals"},
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
#define MAX_VALUES 512

/* Test data that is itself wrong: a failure there is reported as not applicable, with the reason. */
static const struct {
    const char *prefix; /* of the test directory's name */
    const char *why;
} bad_expectations[] = {
    {"test_hannwindow", "ONNX's expected window was computed with pi = 3.1415 (its w[1] and w[N-1] differ "
                        "in a periodic window); the graph itself is evaluated exactly"},
    {"test_hammingwindow", "ONNX's expected window was computed with pi = 3.1415; the graph is evaluated exactly"},
    {"test_blackmanwindow", "ONNX's expected window was computed with pi = 3.1415; the graph is evaluated exactly"},
};

static const char *bad_expectation(const char *dir)
{
    const char *base = strrchr(dir, '/');
    base = base ? base + 1 : dir;
    for (size_t i = 0; i < sizeof bad_expectations / sizeof *bad_expectations; i++)
        if (!strncmp(base, bad_expectations[i].prefix, strlen(bad_expectations[i].prefix))) return bad_expectations[i].why;
    return NULL;
}

/* The values of one graph run, by name: fed inputs, initializers and what nodes produced. */
typedef struct values {
    const char *name[MAX_VALUES];
    const wgt_onnx_tensor *t[MAX_VALUES];
    int n;
    wgt_onnx_tensor produced[MAX_VALUES];
    int n_produced;
} values;

static void bind(values *v, const char *name, const wgt_onnx_tensor *t)
{
    if (v->n < MAX_VALUES && name && name[0]) v->name[v->n] = name, v->t[v->n++] = t;
}

static const wgt_onnx_tensor *lookup(const values *v, const char *name)
{
    for (int i = v->n - 1; i >= 0; i--) /* the latest definition wins */
        if (!strcmp(v->name[i], name)) return v->t[i];
    return NULL;
}

/* Run every node in order (ONNX graphs are topologically sorted). */
static wgt_onnx_result run_graph(const wgt_onnx_model *m, const wgt_onnx_backend *backend, values *v,
                                 char *why, size_t n)
{
    for (int i = 0; i < m->n_nodes; i++) {
        const wgt_onnx_node *node = &m->nodes[i];
        const wgt_onnx_tensor *args[MAX_IO] = {0};
        if (node->n_inputs > MAX_IO || node->n_outputs > MAX_IO || v->n_produced + node->n_outputs > MAX_VALUES) {
            snprintf(why, n, "node %d (%s): too many values for the runner", i, node->op_type);
            return NA;
        }
        for (int k = 0; k < node->n_inputs; k++) {
            if (!node->inputs[k][0]) continue;
            if (!(args[k] = lookup(v, node->inputs[k]))) {
                snprintf(why, n, "node %d (%s): input '%s' has no data", i, node->op_type, node->inputs[k]);
                return FAIL;
            }
        }
        wgt_onnx_tensor *out = &v->produced[v->n_produced];
        wgt_status st = wgt_onnx_run_node(backend, node, m->opset, args, node->n_inputs, out, node->n_outputs);
        if (st) {
            snprintf(why, n, "%s%s%s", m->n_nodes > 1 ? node->op_type : "", m->n_nodes > 1 ? " node: " : "",
                     st == WGT_ERR_UNSUPPORTED ? wgt_errmsg() : "");
            if (st == WGT_ERR_UNSUPPORTED) return NA;
            size_t len = strlen(why);
            snprintf(why + len, n - len, "run: %s: %s", wgt_status_str(st), wgt_errmsg());
            return FAIL;
        }
        v->n_produced += node->n_outputs;
        for (int k = 0; k < node->n_outputs; k++) bind(v, node->outputs[k], &out[k]);
    }
    return PASS;
}

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
    if (m->n_nodes == 1) snprintf(op_out, op_size, "%s", m->nodes[0].op_type);
    else snprintf(op_out, op_size, "(multi-node graph)");
    /* Every op must be mapped; the tolerance is the loosest of the graph's ops. */
    tol t = {"", 0, 0, ""};
    int has_cast = 0;
    for (int i = 0; i < m->n_nodes; i++) {
        const char *op = m->nodes[i].op_type;
        if (!wgt_onnx_op_known(op)) {
            snprintf(why, n, "no reference op for %s", op);
            wgt_onnx_model_free(m);
            return NA;
        }
        const tol *o = tol_for(op);
        if (o->rtol > t.rtol) t.rtol = o->rtol;
        if (o->atol > t.atol) t.atol = o->atol;
        has_cast |= !strcmp(op, "Cast") || !strcmp(op, "CastLike");
    }
    if (m->n_nodes == 0) {
        snprintf(why, n, "an empty graph");
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
    static values v; /* large: not on the stack */
    wgt_onnx_result result = PASS;
    int sets = 0, narrowed = 0;
    for (int s = 0; result == PASS; s++) {
        char set[8300];
        snprintf(set, sizeof set, "%s/test_data_set_%d", dir, s);
        if (!is_dir(set)) break;
        sets++;
        wgt_onnx_tensor given[MAX_IO] = {{0}}, want[MAX_IO] = {{0}};
        int n_want = 0;
        memset(&v, 0, sizeof v);
        for (int j = 0; j < m->n_initializers; j++) bind(&v, m->initializers[j].name, &m->initializers[j]);
        for (int k = 0; k < n_feed; k++) {
            snprintf(path, sizeof path, "%s/input_%d.pb", set, k);
            if (wgt_onnx_tensor_read(path, &given[k])) {
                snprintf(why, n, "input %d: %s", k, wgt_errmsg());
                result = NA; /* sequences and optionals are not TensorProtos */
                break;
            }
            if (!has_cast) narrowed |= narrow_to_f32(&given[k]);
            bind(&v, m->inputs[feed[k]], &given[k]);
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
        if (result == PASS) result = run_graph(m, backend, &v, why, n);
        for (int k = 0; result == PASS && k < n_want; k++) {
            const wgt_onnx_tensor *got = lookup(&v, m->outputs[k]);
            if (!got || (!got->data && got->numel)) {
                snprintf(why, n, "output '%s' not produced", m->outputs[k]);
                result = FAIL;
                break;
            }
            char w[512];
            wgt_onnx_result r = compare(got, &want[k], &t, tol_scale, w, sizeof w);
            if (r != PASS) {
                snprintf(why, n, "set %d output %d: %s", s, k, w);
                result = r;
            }
        }
        for (int k = 0; k < v.n_produced; k++) wgt_onnx_tensor_clear(&v.produced[k]);
        for (int k = 0; k < MAX_IO; k++) wgt_onnx_tensor_clear(&given[k]), wgt_onnx_tensor_clear(&want[k]);
    }
    if (result == PASS && sets == 0) {
        snprintf(why, n, "no test_data_set_N directory");
        result = NA;
    }
    if (result == PASS && narrowed) snprintf(why, n, "DOUBLE data run in f32 (wgt has no f64)");
    const char *bad = bad_expectation(dir);
    if (result == FAIL && bad) {
        char detail[512];
        snprintf(detail, sizeof detail, "%s", why);
        snprintf(why, n, "known bad expectation: %s (%s)", bad, detail);
        result = NA;
    }
    wgt_onnx_model_free(m);
    return result;
}

void wgt_onnx_tolerance(const char *op_type, double *rtol, double *atol, const char **why)
{
    const tol *t = tol_for(op_type);
    *rtol = t->rtol, *atol = t->atol;
    if (why) *why = t->why;
}
