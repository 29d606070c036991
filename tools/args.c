/* Strict command-line option parsing: see args.h. */
#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

args args_begin(const char *cmd, int argc, char **argv)
{
    args a = {cmd, argc, argv, 0, 0};
    return a;
}

int args_next(args *a)
{
    if (a->bad) return 0;
    return ++a->i < a->argc;
}

const char *args_cur(const args *a) { return a->i < a->argc ? a->argv[a->i] : ""; }

/* 1 when s is one of the '|'-separated names. */
static int is_one_of(const char *s, const char *names)
{
    size_t n = strlen(s);
    for (const char *p = names; *p;) {
        const char *e = strchr(p, '|');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, s, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

int args_flag(args *a, const char *names) { return is_one_of(args_cur(a), names); }

/* The value after a matched option, or NULL (refused, with `takes` saying what it wants). */
static const char *value(args *a, const char *takes)
{
    const char *opt = a->argv[a->i];
    if (a->i + 1 >= a->argc) {
        fprintf(stderr, "wgt %s: %s needs a value (%s)\n", a->cmd, opt, takes);
        a->bad = 1;
        return NULL;
    }
    return a->argv[++a->i];
}

int args_str(args *a, const char *names, const char **out)
{
    if (!is_one_of(args_cur(a), names)) return 0;
    const char *v = value(a, "a string");
    if (v) *out = v;
    return 1;
}

/* strtoll/strtoull accept leading blanks and, for the unsigned one, a minus sign that wraps:
 * only [+-]?digits with nothing after is a whole number here. */
static int whole_number(const char *s, int allow_minus)
{
    if (*s == '+' || (allow_minus && *s == '-')) s++;
    if (!isdigit((unsigned char)*s)) return 0;
    while (isdigit((unsigned char)*s)) s++;
    return *s == 0;
}

static int parse_int(const char *cmd, const char *what, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!whole_number(s, 1)) {
        fprintf(stderr, "wgt %s: %s '%s' is not a whole number: give one from %lld to %lld\n", cmd, what, s,
                (long long)lo, (long long)hi);
        return 1;
    }
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE || v < lo || v > hi) {
        fprintf(stderr, "wgt %s: %s '%s' is out of range: give a whole number from %lld to %lld\n", cmd, what, s,
                (long long)lo, (long long)hi);
        return 1;
    }
    *out = v;
    return 0;
}

int args_parse_int(const char *cmd, const char *what, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    return parse_int(cmd, what, s, lo, hi, out);
}

int args_int(args *a, const char *names, int64_t lo, int64_t hi, int64_t *out)
{
    if (!is_one_of(args_cur(a), names)) return 0;
    char takes[96];
    snprintf(takes, sizeof takes, "a whole number from %lld to %lld", (long long)lo, (long long)hi);
    const char *opt = args_cur(a), *v = value(a, takes);
    if (v && parse_int(a->cmd, opt, v, lo, hi, out)) a->bad = 1;
    return 1;
}

int args_int32(args *a, const char *names, int32_t lo, int32_t hi, int32_t *out)
{
    int64_t v;
    if (!args_int(a, names, lo, hi, &v)) return 0;
    if (!a->bad) *out = (int32_t)v;
    return 1;
}

int args_u64(args *a, const char *names, uint64_t hi, uint64_t *out)
{
    if (!is_one_of(args_cur(a), names)) return 0;
    char takes[96];
    snprintf(takes, sizeof takes, "a whole number from 0 to %llu", (unsigned long long)hi);
    const char *opt = args_cur(a), *v = value(a, takes);
    if (!v) return 1;
    errno = 0;
    unsigned long long x = whole_number(v, 0) ? strtoull(v, NULL, 10) : 0;
    if (!whole_number(v, 0) || errno == ERANGE || x > hi) {
        fprintf(stderr, "wgt %s: %s '%s' is %s: give %s\n", a->cmd, opt, v,
                whole_number(v, 0) ? "out of range" : "not a whole number", takes);
        a->bad = 1;
    } else
        *out = x;
    return 1;
}

static void number_range(char *buf, size_t cap, double lo, int lo_open, double hi)
{
    if (lo_open) snprintf(buf, cap, "a number greater than %g and at most %g", lo, hi);
    else snprintf(buf, cap, "a number from %g to %g", lo, hi);
}

static int parse_double(const char *cmd, const char *what, const char *s, double lo, int lo_open, double hi,
                        double *out)
{
    char takes[96];
    number_range(takes, sizeof takes, lo, lo_open, hi);
    char *end = NULL;
    /* strtod skips leading blanks and reads "nan" and "inf": neither is a value here */
    double x = isspace((unsigned char)*s) ? NAN : strtod(s, &end);
    int number = end && end != s && *end == 0 && isfinite(x);
    if (!number || x < lo || (lo_open && x == lo) || x > hi) {
        fprintf(stderr, "wgt %s: %s '%s' is %s: give %s\n", cmd, what, s, number ? "out of range" : "not a number",
                takes);
        return 1;
    }
    *out = x;
    return 0;
}

int args_parse_double(const char *cmd, const char *what, const char *s, double lo, int lo_open, double hi, double *out)
{
    return parse_double(cmd, what, s, lo, lo_open, hi, out);
}

int args_double(args *a, const char *names, double lo, int lo_open, double hi, double *out)
{
    if (!is_one_of(args_cur(a), names)) return 0;
    char takes[96];
    number_range(takes, sizeof takes, lo, lo_open, hi);
    const char *opt = args_cur(a), *v = value(a, takes);
    if (v && parse_double(a->cmd, opt, v, lo, lo_open, hi, out)) a->bad = 1;
    return 1;
}

int args_float(args *a, const char *names, double lo, int lo_open, double hi, float *out)
{
    double x = 0;
    if (!args_double(a, names, lo, lo_open, hi, &x)) return 0;
    if (!a->bad) *out = (float)x;
    return 1;
}

int args_unknown(args *a)
{
    fprintf(stderr, "wgt %s: unknown option '%s' (see wgt %s --help)\n", a->cmd, args_cur(a), a->cmd);
    a->bad = 1;
    return 2;
}
