/* The op table (src/ops/<family>.def, src/ops/optable.h) is the one list of ops: this checks that
 * what reads it sees every row, and that each row's columns name real things.
 *  - every OP( row written in src/ops/ *.def is in the harness's table (a .def file that
 *    optable_all.h leaves out, or a row the harness drops, fails), names unique;
 *  - the family is the .def file's name and src/ops/<family>.c exists beside it; the forward is
 *    defined in src/ops/<family>.c and the reference in src/cpu/<family>.c (one family name per
 *    family across the two folders);
 *  - the unary, binary, reduce and scan rows are the public enums one to one, by name;
 *  - forward and reference name functions (the table takes their addresses), the harness's
 *    generator makes n_in inputs, a doc line is there;
 *  - every grad id a row names has a backward rule (RULE row) and every rule id a row;
 *  - every ONNX op type a row names is one the ONNX executor knows;
 *  - the harness's generators and calls (testkit/harness/table_*.c) name no op in a string: what
 *    differs per op is in its row (code, variants), so no second list of names grows there;
 *  - the GRAD rows (gradient checks, testkit/grad) name rows that record a backward rule (or views
 *    with a RULE row), their names are unique, and every backward rule a row names has one;
 *  - the gradient checks' forwards (testkit/grad/gradcheck.c) name no op in a string either.
 * tests/ops/test_readme_ops.sh checks README.md and docs/ops.md against `wgt ops`. */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"
#include "grad/gradcheck.h"
#include "harness/harness.h"
#include "onnx/onnx.h"
#include "support/check.h"

/* The repository root, from this file's path (CMake compiles it by its absolute path). */
static void root_dir(char *buf, size_t size)
{
    snprintf(buf, size, "%s", __FILE__);
    char *p = strstr(buf, "/tests/ops/test_optable.c");
    if (p) *p = 0;
    else snprintf(buf, size, ".");
}

/* Count the rows written in one .def file (lines that begin with "OP(") and check their names
 * against the table's family. */
static int count_rows(const char *path, const char *family, const hx_op *ops, int n)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1024];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "OP(\"", 4)) continue;
        rows++;
        char name[128];
        size_t k = 0;
        for (const char *q = line + 4; *q && *q != '"' && k + 1 < sizeof name; q++) name[k++] = *q;
        name[k] = 0;
        const hx_op *o = hx_find(name);
        CHECK(o != NULL, "%s: row \"%s\" is not in the harness's table (is the file in src/ops/optable_all.h?)", path,
              name);
        if (o) CHECK(!strcmp(o->family, family), "%s: row \"%s\" has family %s", path, name, o->family);
    }
    fclose(f);
    (void)ops, (void)n;
    return rows;
}

static void check_files(const hx_op *ops, int n)
{
    char root[1024], path[1400];
    root_dir(root, sizeof root);
    snprintf(path, sizeof path, "%s/src/ops", root);
    DIR *d = opendir(path);
    CHECK(d != NULL, "cannot open %s", path);
    if (!d) return;
    int rows = 0, files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".def")) continue;
        char family[256];
        snprintf(family, sizeof family, "%.*s", (int)(len - 4), e->d_name);
        snprintf(path, sizeof path, "%s/src/ops/%s", root, e->d_name);
        int r = count_rows(path, family, ops, n);
        CHECK(r > 0, "%s: no OP rows", path);
        rows += r > 0 ? r : 0;
        files++;
        snprintf(path, sizeof path, "%s/src/ops/%s.c", root, family);
        FILE *f = fopen(path, "r");
        CHECK(f != NULL, "family %s: no %s beside its rows", family, path);
        if (f) fclose(f);
    }
    closedir(d);
    CHECK(rows == n, "%d OP rows in src/ops/*.def, %d ops in the harness's table", rows, n);
    printf("%d rows in %d families\n", rows, files);
}

/* A whole file, or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) buf[n] = 0;
    else free(buf), buf = NULL;
    fclose(f);
    return buf;
}

/* fn is defined (a line beginning "wgt_status fn(") in DIR/family.c. */
static int defined_in(const char *dir, const char *family, const char *fn)
{
    char root[1024], path[1400], def[256];
    root_dir(root, sizeof root);
    snprintf(path, sizeof path, "%s/%s/%s.c", root, dir, family);
    snprintf(def, sizeof def, "\nwgt_status %s(", fn);
    char *text = slurp(path);
    int found = text && strstr(text, def);
    free(text);
    return found;
}

static void check_homes(const hx_op *ops, int n)
{
    for (int i = 0; i < n; i++) {
        const hx_op *o = &ops[i];
        CHECK(defined_in("src/ops", o->family, o->forward), "%s: %s is not defined in src/ops/%s.c", o->name,
              o->forward, o->family);
        if (o->reference_fn)
            CHECK(defined_in("src/cpu", o->family, o->reference), "%s: %s is not defined in src/cpu/%s.c", o->name,
                  o->reference, o->family);
    }
}

/* No string literal in a file is an op's name. */
static void check_no_names_in(const char *path)
{
    char *text = slurp(path);
    CHECK(text != NULL, "cannot read %s", path);
    for (char *p = text ? strchr(text, '"') : NULL; p; p = strchr(p + 1, '"')) {
        char *q = strchr(p + 1, '"');
        if (!q) break;
        char lit[128];
        if (q - p - 1 < (long)sizeof lit) {
            snprintf(lit, sizeof lit, "%.*s", (int)(q - p - 1), p + 1);
            CHECK(!hx_find(lit), "%s names the op \"%s\": put what differs per op in its row", path, lit);
        }
        p = q;
    }
    free(text);
}

/* testkit/harness/table_*.c and testkit/grad/gradcheck.c name no op: the rows do. */
static void check_no_names(void)
{
    char root[1024], path[1400];
    root_dir(root, sizeof root);
    snprintf(path, sizeof path, "%s/testkit/grad/gradcheck.c", root);
    check_no_names_in(path);
    snprintf(path, sizeof path, "%s/testkit/harness", root);
    DIR *d = opendir(path);
    CHECK(d != NULL, "cannot open %s", path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "table_", 6) || len < 3 || strcmp(e->d_name + len - 2, ".c")) continue;
        snprintf(path, sizeof path, "%s/testkit/harness/%s", root, e->d_name);
        check_no_names_in(path);
    }
    closedir(d);
}

/* The rows whose forward is the enum's function are the enum, one to one by name. */
static void check_enum(const hx_op *ops, int n, const char *forward, int count, const char *(*name_of)(int))
{
    int *seen = calloc((size_t)count, sizeof *seen);
    if (!seen) return;
    for (int i = 0; i < n; i++) {
        if (strcmp(ops[i].forward, forward)) continue;
        int c = ops[i].code;
        CHECK(c >= 0 && c < count, "%s: code %d out of %s's range", ops[i].name, c, forward);
        if (c < 0 || c >= count) continue;
        seen[c]++;
        CHECK(!strcmp(name_of(c), ops[i].name), "row %s has the code of %s", ops[i].name, name_of(c));
    }
    for (int c = 0; c < count; c++) CHECK(seen[c] == 1, "%s op %s: %d rows", forward, name_of(c), seen[c]);
    free(seen);
}

static const char *unary_name(int c) { return wgt_unary_op_name((wgt_unary_op)c); }
static const char *binary_name(int c) { return wgt_binary_op_name((wgt_binary_op)c); }
static const char *reduce_name(int c) { return wgt_reduce_op_name((wgt_reduce_op)c); }
static const char *scan_name(int c) { return wgt_scan_op_name((wgt_scan_op)c); }

static void check_rows(const hx_op *ops, int n)
{
    for (int i = 0; i < n; i++) {
        const hx_op *o = &ops[i];
        for (int j = 0; j < i; j++) CHECK(strcmp(o->name, ops[j].name), "two rows named %s", o->name);
        CHECK(o->doc && o->doc[0], "%s: no doc line", o->name);
        CHECK(o->forward_fn != NULL, "%s: no forward function", o->name);
        CHECK(o->reference_fn != NULL || !strcmp(o->reference, "OP_COMPOSED"), "%s: no reference", o->name);
        CHECK(o->dtypes != 0, "%s: no dtype", o->name);
        CHECK(o->n_out >= 1, "%s: %d outputs", o->name, o->n_out);
        /* the harness's generator makes the inputs the row says (the most over the cases) */
        int most = 0;
        for (int d = 0; d < WGT_DTYPE_COUNT; d++) {
            if (!(o->dtypes & HX_DT(d))) continue;
            for (int c = 0; c < HX_CASE_COUNT; c++) {
                hx_input in[HX_MAX_IN];
                memset(in, 0, sizeof in);
                int k = o->setup(o, (hx_case)c, (wgt_dtype)d, in);
                if (k > most) most = k;
            }
            break;
        }
        if (o->n_in > 0) CHECK(most == o->n_in, "%s: the row says %d inputs, the harness makes %d", o->name, o->n_in, most);
        if (o->n_in < 0) CHECK(most >= 2, "%s: a list input, the harness makes %d", o->name, most);
        /* the backward rule */
        if (o->grad) {
            CHECK(o->grad > 0 && o->grad < OP_GRAD_COUNT, "%s: grad id %d", o->name, o->grad);
            CHECK(ag_rule_of((op_grad_id)o->grad) != NULL, "%s: %s has no RULE row", o->name, o->grad_name);
            CHECK(hx_backward_name(o->grad) != NULL, "%s: %s has no backward name", o->name, o->grad_name);
        }
        /* each ONNX type is one the executor maps */
        char buf[256];
        snprintf(buf, sizeof buf, "%s", o->onnx);
        for (char *t = strtok(buf, " "); t; t = strtok(NULL, " ")) {
            CHECK(isupper((unsigned char)t[0]), "%s: ONNX type '%s'", o->name, t);
            CHECK(wgt_onnx_op_known(t), "%s: the ONNX executor does not know %s", o->name, t);
        }
    }
    /* every rule id is named by a row, or recorded by a view of src/tensor (reshape, transpose,
     * permute, narrow, expand: views, not ops, so not rows) */
    for (int g = 1; g < OP_GRAD_COUNT; g++) {
        CHECK(ag_rule_of((op_grad_id)g) != NULL, "recorder id %d has no RULE row", g);
        int named = 0;
        for (int i = 0; i < n; i++) named |= ops[i].grad == g;
        int view = g == OP_GRAD_RESHAPE || g == OP_GRAD_TRANSPOSE || g == OP_GRAD_PERMUTE || g == OP_GRAD_NARROW ||
                   g == OP_GRAD_EXPAND;
        CHECK(named || view, "rule %s: no row names its id", ag_rule_of((op_grad_id)g) ? ag_rule_of((op_grad_id)g)->name : "?");
    }
}

/* The GRAD rows: each checks a row that records a backward rule (or a view with a RULE row), the
 * names are unique, and every rule a row names is checked by a case of some row with that rule. */
static int view_rule(const char *name)
{
    for (int g = 1; g < OP_GRAD_COUNT; g++) {
        const ag_rule *r = ag_rule_of((op_grad_id)g);
        int view = g == OP_GRAD_RESHAPE || g == OP_GRAD_TRANSPOSE || g == OP_GRAD_PERMUTE || g == OP_GRAD_NARROW ||
                   g == OP_GRAD_EXPAND;
        if (view && r && !strcmp(r->name, name)) return 1;
    }
    return 0;
}

static void check_grad_cases(const hx_op *ops, int n)
{
    int count = gc_case_count();
    CHECK(count > 100, "only %d gradient cases", count);
    for (int k = 0; k < count; k++) {
        const char *op = gc_case_op(k), *name = gc_case_name(k);
        const hx_op *o = hx_find(op);
        CHECK(o || view_rule(op), "GRAD row %s: no row or view named %s", name, op);
        if (o) CHECK(o->grad && o->grad != OP_GRAD_NONDIFF, "GRAD row %s: %s records no backward rule", name, op);
        for (int j = 0; j < k; j++) CHECK(strcmp(name, gc_case_name(j)), "two GRAD rows named %s", name);
    }
    for (int i = 0; i < n; i++) {
        int g = ops[i].grad, first = 1;
        for (int j = 0; j < i; j++) first &= ops[j].grad != g;
        /* OP_GRAD_NONDIFF: the ops declared without a gradient (test_grad_audit checks them) */
        if (!g || g == OP_GRAD_NONDIFF || !first) continue;
        int checked = 0;
        for (int k = 0; k < count && !checked; k++) {
            const hx_op *o = hx_find(gc_case_op(k));
            checked = o && o->grad == g;
        }
        CHECK(checked, "%s (%s and others): no GRAD row checks its rule", ops[i].grad_name, ops[i].name);
    }
    printf("%d gradient cases\n", count);
}

int main(void)
{
    int n;
    const hx_op *ops = hx_ops(&n);
    CHECK(n > 150, "only %d ops in the table", n);
    check_files(ops, n);
    check_rows(ops, n);
    check_homes(ops, n);
    check_no_names();
    check_enum(ops, n, "wgt_unary", WGT_UNARY_COUNT, unary_name);
    check_enum(ops, n, "wgt_binary", WGT_BINARY_COUNT, binary_name);
    check_enum(ops, n, "wgt_reduce", WGT_REDUCE_COUNT, reduce_name);
    check_enum(ops, n, "wgt_scan", WGT_SCAN_COUNT, scan_name);
    check_grad_cases(ops, n);
    return test_finish("test_optable");
}
