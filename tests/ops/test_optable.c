/* The op table (src/ops/<family>.def, src/ops/optable.h) is the one list of ops: this checks that
 * what reads it sees every row, and that each row's columns name real things.
 *  - every OP( row written in src/ops/ *.def is in the harness's table (a .def file that
 *    optable_all.h leaves out, or a row the harness drops, fails), names unique;
 *  - the family is the .def file's name and src/ops/<family>.c exists beside it; the forward is
 *    defined in src/ops/<family>.c and the reference in src/cpu/<family>.c (one family name per
 *    family across the two folders);
 *  - the unary, binary, reduce and scan rows are the public enums one to one, by name (the names
 *    wgt_unary_op_name & co. give are written by the build from the rows: cmake/gen_optable.cmake,
 *    as are the recorder ids of src/tensor/record.h), and no source file lists ops by hand (a
 *    table of op names, a recorder id declared as an enumerator);
 *  - forward and reference name functions (the table takes their addresses), the harness's
 *    generator makes n_in inputs, a doc line is there;
 *  - every grad id a row names has a backward rule (RULE row) and every rule id a row;
 *  - every ONNX op type a row names is one the ONNX executor knows; the device adapters the onnx
 *    column names: the rows of one reference name the same one, every reference an OX_CALL or
 *    OX_HAS of testkit/onnx names has one (and every adapter is called), and the GPU backend
 *    answers each reference with its adapter (the types match: onnx_gpu.c checks that when built);
 *  - the harness's generators and calls (testkit/harness/table_*.c) and its table (table.c) name no
 *    op in a string: what differs per op is in its row (code, variants, known issues on an adapter),
 *    so no second list of names grows there;
 *  - the GRAD rows (gradient checks, testkit/grad) name rows not declared non-differentiable,
 *    their names are unique, and every backward rule a row names has one;
 *  - every function include/wgt.h declares is the forward of a row, or on the short list of
 *    non-op API below (contexts, tensor objects, files, models, ...), or a named form of a row's op,
 *    or pending (a public op without a row yet, listed; stale entries fail), or one of the
 *    in-place updates of training state (optimizer step, gradient clipping: `updates`, with the
 *    reason they are not rows), defined in the autograd layer and called by their own test;
 *  - the gradient checks' forwards (testkit/grad/gradcheck.c) and the autograd audit (audit.c) name no op
 *    in a string either.
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
#include "onnx/onnx_gpu.h"
#include "support/check.h"
#include "support/fixture.h"

/* The repository root: WGT_ROOT (tests/run.sh sets it), else from this file's path (CMake compiles
 * it by its absolute path, but a ccache with base_dir makes __FILE__ relative to the build folder). */
static void root_dir(char *buf, size_t size)
{
    const char *env = getenv("WGT_ROOT");
    if (env && *env) {
        snprintf(buf, size, "%s", env);
        return;
    }
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

/* fn is defined (a line beginning "wgt_status fn(") in DIR/family.c. */
static int defined_in(const char *dir, const char *family, const char *fn)
{
    char root[1024], path[1400], def[256];
    root_dir(root, sizeof root);
    snprintf(path, sizeof path, "%s/%s/%s.c", root, dir, family);
    snprintf(def, sizeof def, "\nwgt_status %s(", fn);
    char *text = test_slurp(path);
    int found = text && strstr(text, def);
    free(text);
    return found;
}

/* FILE (relative to the repository root) holds PREFIX then "FN(". */
static int file_has(const char *file, const char *prefix, const char *fn)
{
    char root[1024], path[1400], what[256];
    root_dir(root, sizeof root);
    snprintf(path, sizeof path, "%s/%s", root, file);
    snprintf(what, sizeof what, "%s%s(", prefix, fn);
    char *text = test_slurp(path);
    int found = text && strstr(text, what);
    free(text);
    return found;
}

/* The forward is defined in src/ops/<family>.c (a view's may be in the tensor layer), the
 * reference in src/cpu/<family>.c or, when it serves rows of another family too, where one of
 * those rows' family says (assign's reference is cast's). */
static void check_homes(const hx_op *ops, int n)
{
    for (int i = 0; i < n; i++) {
        const hx_op *o = &ops[i];
        int view = !strcmp(o->reference, "OP_VIEW");
        CHECK(defined_in("src/ops", o->family, o->forward) ||
                  (view && (defined_in("src/ops", "tensor_ops", o->forward) || defined_in("src/tensor", "tensor", o->forward))),
              "%s: %s is not defined in src/ops/%s.c", o->name, o->forward, o->family);
        if (!o->reference_fn) continue;
        int home = defined_in("src/cpu", o->family, o->reference);
        for (int j = 0; j < n && !home; j++)
            home = j != i && ops[j].reference_fn == o->reference_fn && defined_in("src/cpu", ops[j].family, o->reference);
        CHECK(home, "%s: %s is not defined in src/cpu/%s.c", o->name, o->reference, o->family);
    }
}

/* No string literal in a file is an op's name. */
static void check_no_names_in(const char *path)
{
    char *text = test_slurp(path);
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

/* testkit/harness/table.c and table_*.c, testkit/grad/gradcheck.c and audit.c name no op: the rows do. */
static void check_no_names(void)
{
    char root[1024], path[1400];
    root_dir(root, sizeof root);
    snprintf(path, sizeof path, "%s/testkit/grad/gradcheck.c", root);
    check_no_names_in(path);
    snprintf(path, sizeof path, "%s/testkit/grad/audit.c", root);
    check_no_names_in(path);
    /* table.c too: an op's known issues are in its row (.known), not in a list beside the table */
    snprintf(path, sizeof path, "%s/testkit/harness/table.c", root);
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

/* A line of a source file that lists ops by hand: a table's line of three or more string literals,
 * each an op's name, with only commas and blanks between them (and before them, at most the
 * table's opening "... = {"), as src/cpu/op_kinds.c held before the build wrote its names; or a
 * recorder id declared as an enumerator ("OP_GRAD_X," or "OP_GRAD_X = 3," alone on its line but for a
 * comment), as src/tensor/record.h held. An op's code naming itself in its messages is neither. */
static int only_chars(const char *from, const char *to, const char *allowed)
{
    for (const char *c = from; c < to; c++) {
        if (c[0] == '/' && c[1] == '*') return 1; /* a comment to the end */
        if (!strchr(allowed, *c)) return 0;
    }
    return 1;
}

static int hand_list_line(const char *line)
{
    const char *s = line;
    while (*s == ' ' || *s == '\t') s++;
    if (!strncmp(s, "OP_GRAD_", 8)) {
        s += 8;
        while (isupper((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_') s++;
        while (*s == ' ') s++;
        if (*s == '=' && s[1] != '=') {
            for (s++; *s == ' ' || isdigit((unsigned char)*s); s++) {}
        }
        if (*s == ',' && only_chars(s + 1, s + strlen(s), " \t\r\n")) return 1;
    }
    int names = 0;
    const char *end = line; /* after the last literal */
    const char *first = strchr(line, '"');
    if (!first) return 0;
    const char *brace = strrchr(line, '{');
    if (!(brace && brace < first ? only_chars(brace + 1, first, " \t") : only_chars(line, first, " \t"))) return 0;
    for (const char *p = first; p; p = strchr(end, '"')) {
        const char *q = strchr(p + 1, '"');
        if (!q) return 0;
        if (names && !only_chars(end, p, " \t,")) return 0;
        char lit[128];
        if (q - p - 1 >= (long)sizeof lit) return 0;
        snprintf(lit, sizeof lit, "%.*s", (int)(q - p - 1), p + 1);
        if (!hx_find(lit)) return 0;
        names++;
        end = q + 1;
    }
    return names >= 3 && only_chars(end, end + strlen(end), " \t,};\r\n");
}

/* Walk DIR (relative to the root) for .c and .h files with a hand_list_line. */
static void check_no_hand_lists_in(const char *root, const char *dir, int *files)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", root, dir);
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char sub[512];
        if (snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) >= (int)sizeof sub) continue;
        size_t len = strlen(e->d_name);
        if (len > 2 && (!strcmp(e->d_name + len - 2, ".c") || !strcmp(e->d_name + len - 2, ".h"))) {
            if (snprintf(path, sizeof path, "%s/%s", root, sub) >= (int)sizeof path) continue;
            FILE *f = fopen(path, "r");
            if (!f) continue;
            (*files)++;
            char line[2048];
            for (int no = 1; fgets(line, sizeof line, f); no++)
                CHECK(!hand_list_line(line), "%s:%d lists ops by hand (the rows of src/ops/<family>.def are the only list; "
                                             "cmake/gen_optable.cmake writes the names and recorder ids from them): %s",
                      sub, no, line);
            fclose(f);
        } else if (!strchr(e->d_name, '.')) {
            check_no_hand_lists_in(root, sub, files);
        }
    }
    closedir(d);
}

/* No source of the library, the test kit, the CLI or the browser build lists ops by hand: the op
 * names of the enums and the recorder ids come from the rows at build time. */
static void check_no_hand_lists(void)
{
    char root[1024];
    root_dir(root, sizeof root);
    int files = 0;
    static const char *const dirs[] = {"src", "testkit", "tools", "web", "include"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) check_no_hand_lists_in(root, dirs[i], &files);
    CHECK(files > 100, "only %d source files found under %s", files, root);
    /* the tests' own self-check: a line of the old table is found */
    CHECK(hand_list_line("    \"neg\",   \"abs\",     \"sign\",       \"exp\","), "the hand-list check misses a name table");
    CHECK(hand_list_line("    OP_GRAD_UNARY,      /* params */"), "the hand-list check misses a recorder id");
    CHECK(hand_list_line("static const char *const t[] = {\"sum\", \"mean\", \"prod\"}; /* x */"),
          "the hand-list check misses a one-line table");
    CHECK(!hand_list_line("    \"set\", \"add\", \"mul\", \"amax\", \"amin\""), "the hand-list check takes a mode table");
    CHECK(!hand_list_line("    return k == A ? \"sort\" : k == B ? \"topk\" : \"median\";"),
          "the hand-list check takes an op's own messages");
    CHECK(!hand_list_line("        OP_GRAD_MATMUL, in, 2, NULL, 0, out);"), "the hand-list check takes a call");
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
        CHECK(o->reference_fn != NULL || !strcmp(o->reference, "OP_COMPOSED") || !strcmp(o->reference, "OP_VIEW"),
              "%s: no reference", o->name);
        CHECK(o->dtypes != 0, "%s: no dtype", o->name);
        CHECK(o->n_out >= 1 || o->n_out == -1, "%s: %d outputs", o->name, o->n_out);
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
    /* every rule id is named by a row */
    for (int g = 1; g < OP_GRAD_COUNT; g++) {
        CHECK(ag_rule_of((op_grad_id)g) != NULL, "recorder id %d has no RULE row", g);
        int named = 0;
        for (int i = 0; i < n; i++) named |= ops[i].grad == g;
        CHECK(named, "rule %s: no row names its id", ag_rule_of((op_grad_id)g) ? ag_rule_of((op_grad_id)g)->name : "?");
    }
}

/* The row whose reference is named fn, or NULL. */
static const hx_op *row_of_reference(const hx_op *ops, int n, const char *fn)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(ops[i].reference, fn)) return &ops[i];
    return NULL;
}

/* The references that OX_CALL(c, ref, ...) and OX_HAS(c, ref) name in one file of the executor;
 * each must have a device adapter. called[i]: row i's reference is called. */
static void check_onnx_calls_in(const char *path, const hx_op *ops, int n, int *called)
{
    char *text = test_slurp(path);
    CHECK(text != NULL, "cannot read %s", path);
    if (!text) return;
    static const char *const macros[] = {"OX_CALL(", "OX_HAS("};
    for (int m = 0; m < 2; m++)
        for (char *p = strstr(text, macros[m]); p; p = strstr(p + 1, macros[m])) {
            const char *q = strchr(p, ',');
            if (!q) break;
            for (q++; *q == ' ' || *q == '\n'; q++) {}
            char ref[128];
            size_t k = 0;
            for (; (isalnum((unsigned char)*q) || *q == '_') && k + 1 < sizeof ref; q++) ref[k++] = *q;
            ref[k] = 0;
            const hx_op *o = row_of_reference(ops, n, ref);
            CHECK(o != NULL, "%s: %s...) names %s, which is no row's reference", path, macros[m], ref);
            if (!o) continue;
            CHECK(o->onnx_adapter[0], "%s: calls %s, whose rows name no device adapter (write ONNX(\"...\", g_...) "
                  "in the onnx column of row %s)", path, ref, o->name);
            for (int i = 0; i < n; i++)
                if (!strcmp(ops[i].reference, ref)) called[i] = 1;
        }
    free(text);
}

/* The onnx column's device adapters (testkit/onnx/onnx_gpu.c). */
static void check_onnx_adapters(const hx_op *ops, int n)
{
    int *called = calloc((size_t)n, sizeof *called);
    if (!called) return;
    for (int i = 0; i < n; i++) {
        const hx_op *o = &ops[i];
        if (o->onnx_adapter[0])
            CHECK(o->reference_fn != NULL, "%s: an ONNX device adapter (%s) but no reference it stands for", o->name,
                  o->onnx_adapter);
        if (!o->reference_fn) continue;
        for (int j = 0; j < i; j++)
            if (ops[j].reference_fn == o->reference_fn)
                CHECK(!strcmp(ops[j].onnx_adapter, o->onnx_adapter),
                      "%s and %s share the reference %s but name the device adapters '%s' and '%s': one reference, "
                      "one adapter, named by each of its rows", ops[j].name, o->name, o->reference, ops[j].onnx_adapter,
                      o->onnx_adapter);
    }
    char root[1024], path[1400];
    root_dir(root, sizeof root);
    snprintf(path, sizeof path, "%s/testkit/onnx", root);
    DIR *d = opendir(path);
    CHECK(d != NULL, "cannot open %s", path);
    int files = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "onnx_ops", 8) || len < 3 || strcmp(e->d_name + len - 2, ".c")) continue;
        snprintf(path, sizeof path, "%s/testkit/onnx/%s", root, e->d_name);
        check_onnx_calls_in(path, ops, n, called);
        files++;
    }
    if (d) closedir(d);
    CHECK(files >= 2, "only %d executor files (testkit/onnx/onnx_ops*.c)", files);
    /* every adapter is reached, and the GPU backend answers with it */
    wgt_onnx_backend gpu;
    wgt_onnx_gpu_backend(NULL, &gpu);
    int adapters = 0;
    for (int i = 0; i < n; i++) {
        const hx_op *o = &ops[i];
        if (!o->onnx_adapter[0]) continue;
        adapters += !row_of_reference(ops, i, o->reference); /* distinct references */
        CHECK(called[i], "%s: the device adapter %s stands for %s, which no OX_CALL of testkit/onnx calls", o->name,
              o->onnx_adapter, o->reference);
        wgt_onnx_fn f = gpu.fn_for((wgt_onnx_fn)o->reference_fn);
        CHECK(f != NULL && f != (wgt_onnx_fn)o->reference_fn, "%s: the GPU backend has no adapter for %s", o->name,
              o->reference);
        CHECK(wgt_onnx_cpu_backend.fn_for((wgt_onnx_fn)o->reference_fn) == (wgt_onnx_fn)o->reference_fn,
              "%s: the CPU backend does not run %s itself", o->name, o->reference);
    }
    for (int i = 0; i < n; i++)
        if (ops[i].reference_fn && !ops[i].onnx_adapter[0])
            CHECK(gpu.fn_for((wgt_onnx_fn)ops[i].reference_fn) == NULL, "%s: the GPU backend runs %s, but no row names "
                  "an adapter for it", ops[i].name, ops[i].reference);
    CHECK(adapters >= 36, "only %d references have a device adapter", adapters);
    printf("onnx: %d references with a device adapter\n", adapters);
    free(called);
}

/* The GRAD rows: each checks a row that is not declared non-differentiable (its own rule, or the
 * rules of the ops it is made of: split), the names are unique, and every rule a row names is
 * checked by a case of some row with that rule. */
static void check_grad_cases(const hx_op *ops, int n)
{
    int count = gc_case_count();
    CHECK(count > 100, "only %d gradient cases", count);
    for (int k = 0; k < count; k++) {
        const char *op = gc_case_op(k), *name = gc_case_name(k);
        const hx_op *o = hx_find(op);
        CHECK(o != NULL, "GRAD row %s: no row named %s", name, op);
        if (o) CHECK(o->grad != OP_GRAD_NONDIFF, "GRAD row %s: %s is declared non-differentiable", name, op);
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

/* ---- the public header: every op function has a row ------------------------------------------ */

/* What include/wgt.h declares that is not an op, so needs no row (a trailing '*' matches any
 * rest of the name; a function that is some row's forward never gets here). Keep it short:
 * a function that computes a tensor from tensors belongs in the table. */
static const char *const not_ops[] = {
    /* the library: version, errors, dtypes */
    "wgt_version", "wgt_status_str", "wgt_errmsg", "wgt_dtype_*",
    /* contexts and adapters; graph capture and replay of a context's dispatches */
    "wgt_context_*", "wgt_list_adapters", "wgt_graph_*",
    /* tensor objects: constructors from a shape or host data, host transfer, metadata, lifetime */
    "wgt_tensor_empty", "wgt_tensor_zeros", "wgt_tensor_from_host", "wgt_tensor_to_host", "wgt_tensor_free",
    "wgt_tensor_ref", "wgt_tensor_context", "wgt_tensor_dtype", "wgt_tensor_ndim", "wgt_tensor_dim",
    "wgt_tensor_shape", "wgt_tensor_strides", "wgt_tensor_numel", "wgt_tensor_is_contiguous",
    /* the op enums' names, defaults and result rules; the latched index error of a context */
    "*_name", "*_from_name", "*_result_dtype", "wgt_unary_params_default", "wgt_conv_output_shape",
    "wgt_index_check",
    /* random generators (their state; the random ops have rows) */
    "wgt_generator_*",
    /* autograd: marking, reading and clearing gradients, running backward, grad mode */
    "wgt_tensor_set_requires_grad", "wgt_tensor_requires_grad", "wgt_tensor_is_leaf", "wgt_tensor_grad",
    "wgt_tensor_zero_grad", "wgt_tensor_detach", "wgt_backward", "wgt_grad_mode_*",
    /* optimizer objects and schedules (the update itself: see updates) */
    "wgt_optimizer_defaults", "wgt_optimizer_create", "wgt_optimizer_set_*", "wgt_optimizer_lr",
    "wgt_optimizer_get_options", "wgt_optimizer_steps", "wgt_optimizer_param_steps", "wgt_optimizer_state",
    "wgt_optimizer_save", "wgt_optimizer_load", "wgt_optimizer_free", "wgt_lr_at",
    /* quantized formats: block sizes, host-buffer codecs, uploading blocks as a weight */
    "wgt_ftype_*", "wgt_dequantize", "wgt_quantize", "wgt_qweight_upload",
    /* files: GGUF, safetensors, atomic outputs, Hugging Face configs */
    "wgt_gguf_*", "wgt_safetensors_*", "wgt_st_writer_*", "wgt_output_*", "wgt_hf_*",
    /* tokenizers, models, constrained generation (JSON mode), batched serving, training */
    "wgt_tokenizer_*", "wgt_detokenizer_*", "wgt_model_*", "wgt_json_state_*", "wgt_batch_create", "wgt_batch_free", "wgt_batch_slot*",
    "wgt_batch_context", "wgt_batch_step", "wgt_train_*", "wgt_dataset_*", "wgt_trainer_*",
};

/* Forms of a row's op under another name: the function and the row whose harness calls it. */
static const char *const forms[][2] = {
    {"wgt_unary_ex", "relu"}, /* wgt_unary with parameters: the unary rows' variant 1 */
};

/* Public ops that have no row yet (notes/OPTABLE.md, "Open"): each is a gap, listed so that it
 * stays visible; an entry that gets a row fails here as stale. None today. */
static const char *const pending[] = {
    NULL,
};

/* In-place updates of training state, deliberately not rows: they make no new tensor from tensors
 * (the optimizer writes its parameters and moments, clipping scales the gradients it is given),
 * keep state across calls, are not recorded by autograd (no backward) and have no ONNX form, so
 * none of a row's columns but the doc would apply, and the harness's "new output against the
 * reference" call does not fit. Their home is the autograd layer, and each has its own differential
 * test, which this checks they keep: the function is defined in `home`, its CPU reference (if the
 * update has one of its own; clipping is made of the library's reductions) is defined in
 * `reference_home`, and `test` calls the function. */
static const struct update_fn {
    const char *fn, *home, *reference, *reference_home, *test;
} updates[] = {
    {"wgt_optimizer_step", "src/autograd/optim.c", "wgt_cpu_optim_step", "src/cpu/optim.c",
     "tests/autograd/test_gpu_optim.c"},
    {"wgt_clip_grad_norm", "src/autograd/optim_clip.c", NULL, NULL, "tests/autograd/test_gpu_optim.c"},
};

static int name_matches(const char *pat, const char *name)
{
    size_t n = strlen(pat);
    if (pat[0] == '*') return strlen(name) >= n - 1 && !strcmp(name + strlen(name) - (n - 1), pat + 1);
    if (n && pat[n - 1] == '*') return !strncmp(name, pat, n - 1);
    return !strcmp(name, pat);
}

static int row_forward(const hx_op *ops, int n, const char *fn)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(ops[i].forward, fn)) return 1;
    return 0;
}

/* The functions include/wgt.h declares: each statement at brace depth 0 (comments and
 * preprocessor lines removed) that is not a typedef, by the first "wgt_name(" in it. */
static int header_functions(char *text, char names[][64], int cap)
{
    char *w = text;
    for (char *r = text; *r;) { /* strip comments and preprocessor lines */
        if (r[0] == '/' && r[1] == '*') {
            char *e = strstr(r + 2, "*/");
            r = e ? e + 2 : r + strlen(r);
            *w++ = ' ';
        } else if (r[0] == '/' && r[1] == '/') {
            while (*r && *r != '\n') r++;
        } else if (*r == '#' && (r == text || r[-1] == '\n')) {
            while (*r && !(*r == '\n' && r[-1] != '\\')) r++;
        } else
            *w++ = *r++;
    }
    *w = 0;
    int count = 0, depth = 0;
    char *start = text;
    for (char *p = text; *p; p++) {
        if (!strncmp(p, "extern \"C\"", 10)) { /* C++'s linkage block is no nesting */
            char *b = strchr(p, '{');
            if (b) memset(p, ' ', (size_t)(b - p + 1)), p = b;
            continue;
        }
        if (*p == '{') depth++;
        else if (*p == '}' && depth == 0) *p = ' '; /* the linkage block's end */
        else if (*p == '}') depth--;
        else if (*p == ';' && depth == 0) {
            *p = 0;
            char *q = start;
            while (isspace((unsigned char)*q)) q++;
            if (strncmp(q, "typedef", 7)) {
                for (char *f = strstr(q, "wgt_"); f; f = strstr(f + 1, "wgt_")) {
                    if (f > q && (isalnum((unsigned char)f[-1]) || f[-1] == '_')) continue;
                    size_t len = 0;
                    while (isalnum((unsigned char)f[len]) || f[len] == '_') len++;
                    const char *a = f + len;
                    while (isspace((unsigned char)*a)) a++;
                    if (*a != '(') continue;
                    if (count < cap && len < 64) snprintf(names[count++], 64, "%.*s", (int)len, f);
                    break;
                }
            }
            start = p + 1;
        }
    }
    return count;
}

static void check_public_api(const hx_op *ops, int n)
{
    char root[1024], path[1400];
    root_dir(root, sizeof root);
    snprintf(path, sizeof path, "%s/include/wgt.h", root);
    char *text = test_slurp(path);
    CHECK(text != NULL, "cannot read %s", path);
    if (!text) return;
    static char names[1024][64];
    int count = header_functions(text, names, 1024), rows = 0, other = 0;
    free(text);
    CHECK(count > 200, "only %d functions found in include/wgt.h", count);
    for (int k = 0; k < count; k++) {
        const char *fn = names[k];
        if (row_forward(ops, n, fn)) {
            rows++;
            continue;
        }
        int known = 0;
        for (size_t i = 0; i < sizeof not_ops / sizeof *not_ops && !known; i++) known = name_matches(not_ops[i], fn);
        for (size_t i = 0; i < sizeof forms / sizeof *forms && !known; i++) {
            if (strcmp(forms[i][0], fn)) continue;
            known = 1;
            CHECK(hx_find(forms[i][1]) != NULL, "%s: the row %s it is a form of does not exist", fn, forms[i][1]);
        }
        for (size_t i = 0; i < sizeof pending / sizeof *pending && !known; i++) known = pending[i] && !strcmp(pending[i], fn);
        for (size_t i = 0; i < sizeof updates / sizeof *updates && !known; i++) known = !strcmp(updates[i].fn, fn);
        CHECK(known, "include/wgt.h declares %s: no op table row has it as forward, and it is not on "
                     "tests/ops/test_optable.c's list of non-op API (add a row to src/ops/<family>.def)", fn);
        other += known;
    }
    for (size_t i = 0; i < sizeof pending / sizeof *pending; i++) {
        if (!pending[i]) continue;
        int declared = 0;
        for (int k = 0; k < count; k++) declared |= !strcmp(names[k], pending[i]);
        CHECK(declared, "pending %s is not declared in include/wgt.h: remove it from the list", pending[i]);
        CHECK(!row_forward(ops, n, pending[i]), "pending %s has a row now: remove it from the list", pending[i]);
        printf("pending: %s has no row yet\n", pending[i]);
    }
    for (size_t i = 0; i < sizeof updates / sizeof *updates; i++) {
        const struct update_fn *u = &updates[i];
        int declared = 0;
        for (int k = 0; k < count; k++) declared |= !strcmp(names[k], u->fn);
        CHECK(declared, "update %s is not declared in include/wgt.h: remove it from the list", u->fn);
        CHECK(!row_forward(ops, n, u->fn), "update %s has a row now: remove it from the list", u->fn);
        CHECK(file_has(u->home, "\nwgt_status ", u->fn), "update %s is not defined in %s", u->fn, u->home);
        if (u->reference)
            CHECK(file_has(u->reference_home, "\nvoid ", u->reference) || file_has(u->reference_home, "\nwgt_status ", u->reference),
                  "update %s: its reference %s is not defined in %s", u->fn, u->reference, u->reference_home);
        if (u->reference)
            CHECK(file_has(u->home, "", u->reference), "update %s: %s does not call its reference %s", u->fn, u->home, u->reference);
        CHECK(file_has(u->test, "", u->fn), "update %s: its test %s does not call it", u->fn, u->test);
    }
    printf("include/wgt.h: %d functions, %d the forward of a row, %d not ops or pending\n", count, rows, other);
}

int main(void)
{
    int n;
    const hx_op *ops = hx_ops(&n);
    CHECK(n > 150, "only %d ops in the table", n);
    check_files(ops, n);
    check_rows(ops, n);
    check_onnx_adapters(ops, n);
    check_homes(ops, n);
    check_no_names();
    check_enum(ops, n, "wgt_unary", WGT_UNARY_COUNT, unary_name);
    check_enum(ops, n, "wgt_binary", WGT_BINARY_COUNT, binary_name);
    check_enum(ops, n, "wgt_reduce", WGT_REDUCE_COUNT, reduce_name);
    check_enum(ops, n, "wgt_scan", WGT_SCAN_COUNT, scan_name);
    check_no_hand_lists();
    check_grad_cases(ops, n);
    check_public_api(ops, n);
    return test_finish("test_optable");
}
